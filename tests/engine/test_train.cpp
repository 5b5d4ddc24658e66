// The host executor: determinism, the schedule and counters, and that it learns.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/cost.h"
#include "engine/host/ops.h"
#include "engine/layout.h"
#include "engine/step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

TEST(TrainHost, SameSeedSameRunBitForBit) {
  const TrainConfig c = tiny_config();
  auto a = make_host_executor(c);
  auto b = make_host_executor(c);
  EXPECT_TRUE(bitwise_equal(run_epochs(c, *a, 3), run_epochs(c, *b, 3)));
}

TEST(TrainHost, OtherSeedOtherRun) {
  TrainConfig c = tiny_config();
  auto a = make_host_executor(c);
  const RunState ra = run_epochs(c, *a, 2);
  c.seed += 1;
  auto b = make_host_executor(c);
  EXPECT_FALSE(bitwise_equal(ra, run_epochs(c, *b, 2)));
}

TEST(TrainHost, CountersAndMetricsAdvance) {
  const TrainConfig c = tiny_config();
  auto ex = make_host_executor(c);
  std::vector<TrainScalars> m;
  const RunState s = run_epochs(c, *ex, 4, &m);
  ASSERT_EQ(m.size(), 4u);
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(m[e].epoch, uint32_t(e));
    EXPECT_EQ(m[e].adam_step, uint32_t(e));  // snapshot taken before the epoch's update is counted
    EXPECT_TRUE(std::isfinite(m[e].loss));
    EXPECT_GT(m[e].grad_norm, 0.f);
    EXPECT_FLOAT_EQ(m[e].lr, c.lr);
  }
  EXPECT_EQ(s.scalars.epoch, 4u);
  EXPECT_EQ(s.scalars.adam_step, 4u);
  // The parameters moved, the padding between tensors stayed zero in every slab.
  const ParamLayout l(c.hidden_size, c.obs_dim());
  const RunState init = initial_state(c);
  EXPECT_NE(0, std::memcmp(init.slabs.data(), s.slabs.data(), l.total * sizeof(float)));
  for (int slab = 0; slab < 4; ++slab)
    for (const ParamTensor& t : l.tensors)
      for (size_t i = t.offset + t.size(); i < align4(t.offset + t.size()); ++i)
        EXPECT_EQ(s.slabs[slab * l.total + i], 0.f) << t.name;
}

TEST(TrainHost, GrpoIsDeterministicAndCountsEveryUpdate) {
  const TrainConfig c = tiny_grpo_config();
  auto a = make_host_executor(c);
  auto b = make_host_executor(c);
  std::vector<TrainScalars> m;
  const RunState ra = run_epochs(c, *a, 3, &m);
  EXPECT_TRUE(bitwise_equal(ra, run_epochs(c, *b, 3)));
  ASSERT_EQ(m.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(m[e].epoch, uint32_t(e));
    // The snapshot comes after the epoch's first K B - 1 updates are counted, before the last one.
    const int updates = c.ppo_epochs * c.minibatches;
    EXPECT_EQ(m[e].adam_step, uint32_t(e * updates + updates - 1));
    EXPECT_TRUE(std::isfinite(m[e].loss));
    EXPECT_GT(m[e].grad_norm, 0.f);
  }
  EXPECT_EQ(ra.scalars.adam_step, uint32_t(3 * c.ppo_epochs * c.minibatches));
  EXPECT_EQ(ra.scalars.skipped_updates, 0u);
}

TEST(TrainHost, GrpoDiffersFromTheReferenceAndEachKnobMatters) {
  const TrainConfig g = tiny_grpo_config();
  auto run = [](const TrainConfig& c) {
    auto ex = make_host_executor(c);
    return run_epochs(c, *ex, 2);
  };
  const RunState base = run(g);
  TrainConfig ref = g;
  ref.algo = Algo::Reference;
  EXPECT_FALSE(bitwise_equal(base, run(ref)));
  TrainConfig passes = g;
  passes.ppo_epochs = 1;
  EXPECT_FALSE(bitwise_equal(base, run(passes)));
  TrainConfig slices = g;
  slices.minibatches = 1;
  EXPECT_FALSE(bitwise_equal(base, run(slices)));
  TrainConfig kl = g;
  kl.kl_beta = 0.f;
  EXPECT_FALSE(bitwise_equal(base, run(kl)));
  TrainConfig clip = g;
  clip.clip = 0.01f;
  EXPECT_FALSE(bitwise_equal(base, run(clip)));
}

TEST(EpochCost, CountsEveryPassAndSlice) {
  TrainConfig c = tiny_config();
  const double M = double(c.samples()), H = c.hidden_size, D = c.obs_dim();
  const double P = D * H + H * H + 3 * H;
  const EpochCost ref = epoch_cost(c);
  EXPECT_DOUBLE_EQ(ref.flops, 8 * M * P);
  EXPECT_DOUBLE_EQ(ref.flops_executed, 6 * M * P + 6 * M * H);
  c.algo = Algo::Grpo;
  c.ppo_epochs = 1;
  c.minibatches = 1;
  const EpochCost one = epoch_cost(c);  // one pass, one slice: the reference's work
  EXPECT_DOUBLE_EQ(one.flops_executed, ref.flops_executed);
  EXPECT_DOUBLE_EQ(one.min_bytes, ref.min_bytes);
  c.ppo_epochs = 2;
  c.minibatches = 2;
  const EpochCost two = epoch_cost(c);  // a second pass, and 3 of 4 slices recompute the trunk
  EXPECT_DOUBLE_EQ(two.flops, 14 * M * P);
  EXPECT_DOUBLE_EQ(two.flops_executed, 2 * M * P + 2 * (4 * M * P + 6 * M * H) + 1.5 * M * 2 * (D * H + H * H));
  EXPECT_GT(two.min_bytes, ref.min_bytes);
}

TEST(TrainHost, PatienceStopsEarly) {
  TrainConfig c = tiny_config();
  c.total_epochs = 50;
  c.patience = 3;
  c.lr = 1e-12f;  // no learning: the best score comes early and is not beaten for long
  auto ex = make_host_executor(c);
  ex->set_state(initial_state(c));
  const TrainResult r = train_loop(c, *ex, 0, -std::numeric_limits<float>::infinity(), 0, {});
  EXPECT_TRUE(r.early_stopped);
  EXPECT_GE(r.last_epoch, r.best_epoch + 3);
  EXPECT_LE(r.last_epoch, r.best_epoch + 3 + 1);  // lag of at most one epoch
  EXPECT_LT(r.epochs_run, 50u);
}

// --algo grpo under --precision bf16: the products after an update read fc1.weight's bf16 copy,
// which AdamW writes with the update (kernels/adamw.h). After an epoch of several updates the
// copy is the rounding of the moved weights, element for element.
TEST(TrainHost, Bf16CopyOfFc1FollowsEveryUpdate) {
  TrainConfig c = tiny_grpo_config();
  c.precision = Precision::Bf16;
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  RunState st = initial_state(c);
  std::vector<float> arena_f((al.total + 3) / 4 + 16, poison_value());
  void* arena = arena_f.data() + (16 - reinterpret_cast<uintptr_t>(arena_f.data()) % 64 / 4) % 16;
  const StepBuffers b = StepBuffers::over(st.slabs.data(), arena, c);
  *b.scalars = st.scalars;
  const size_t n = size_t(c.hidden_size) * c.hidden_size;
  const std::vector<float> before(b.p.fc1_w, b.p.fc1_w + n);
  HostOps ops(c.game, c.batch_size);
  refresh_weight_copies(ops, b.p, c.hidden_size, c.obs_dim());  // as an executor's set_state does
  training_step(ops, b, c);
  ASSERT_EQ(b.scalars->adam_step, uint32_t(c.ppo_epochs * c.minibatches));
  ASSERT_NE(std::vector<float>(b.p.fc1_w, b.p.fc1_w + n), before) << "the updates moved nothing";
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.p.fc1_w_bf16[i].bits, to_bf16(b.p.fc1_w[i]).bits) << i;
}

}  // namespace
}  // namespace grpo::test
