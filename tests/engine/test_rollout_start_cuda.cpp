// The rollout's start as one kernel (engine/cuda/rollout_step.h's rollout_start_cuda, through
// CudaOps::rollout_start) against its host twin, Ops::rollout_start's default on HostOps
// (games_reset, fc_in_forward, the LayerNorm forward in turn): from the same poisoned arena and
// random parameters, the same game states and observations bit for bit, h0 in fc_in's order to
// the bit, and h1 and the LayerNorm's statistics within the fp32 tolerances (its sums add in the
// fused step's order, not the LayerNorm kernel's); in bf16, h1's copy within a bf16 step and h1
// itself unwritten. Without keep_h0, h0's rows keep their poison. Fresh inputs each run.
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_step.h"
#include "engine/host/ops.h"
#include "engine/step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/game_bytes_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

void expect_start_matches_host_twin(TrainConfig c, bool keep_h0) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, keep_h0 " << keep_h0);
  c.seed = seed;
  const int N = c.games(), D = c.obs_dim(), H = c.hidden_size;
  const ParamLayout pl(H, D);
  const ArenaLayout al(c);
  std::vector<float> slabs(4 * pl.total), words(al.total / 4 + 32, poison_value());
  const auto w = random_floats(pl.total, seed, -0.3f, 0.3f);
  std::copy(w.begin(), w.end(), slabs.begin());
  void* host = words.data() + (16 - reinterpret_cast<uintptr_t>(words.data()) % 64 / 4) % 16;
  const StepBuffers hb = StepBuffers::over(slabs.data(), host, c);
  hb.scalars->epoch = uint32_t(seed % 1000);
  HostOps host_ops(c.game, c.batch_size);
  refresh_weight_copies(host_ops, hb.p, H, D);
  DeviceBuffer<float> dev_slabs(slabs);
  DeviceBuffer<char> dev(std::vector<char>(static_cast<char*>(host), static_cast<char*>(host) + al.total));
  const auto rollout_of = [&](const StepBuffers& b) {
    return Ops::Rollout{b.p,       b.acts,      b.obs,     b.actions,   b.rewards, b.games, c.seed, &b.scalars->epoch,
                        c.dropout, c.max_steps, c.games(), c.obs_dim(), H,         keep_h0};
  };
  Blas blas;
  CudaOps dev_ops(c.game, c.batch_size, blas, nullptr);
  const StepBuffers db = StepBuffers::over(dev_slabs.get(), dev.get(), c);
  dev_ops.rollout_start(rollout_of(db));
  {  // a count of games that is not the game's groups times the replicas is refused before any launch
    Ops::RolloutStep s = rollout_step_at(rollout_of(db), 0);
    s.next = s.now, s.obs_next = db.obs;
    EXPECT_THROW(rollout_start_cuda(c.game, s, c.batch_size + 1, nullptr), std::invalid_argument);
  }
  host_ops.Ops::rollout_start(rollout_of(hb));  // the default: the ops in turn
  std::vector<char> got(al.total);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(got.data(), dev.get(), al.total, cudaMemcpyDeviceToHost));
  const auto at = [&](const void* p) { return static_cast<const char*>(p) - static_cast<const char*>(host); };
  const auto floats = [&](const float* p, size_t n) {
    std::vector<float> v(n);
    std::memcpy(v.data(), got.data() + at(p), n * sizeof(float));
    return v;
  };
  const auto same_bytes = [&](const void* p, size_t n, const char* what) {
    EXPECT_EQ(std::memcmp(got.data() + at(p), p, n), 0) << what;
  };
  const size_t NH = size_t(N) * H;
  same_bytes(hb.obs, size_t(N) * D * 4, "observations");
  expect_same_game_bytes(got, host, hb.games);
  if (keep_h0) {
    same_bytes(hb.acts.h0, NH * 4, "h0 (fc_in's order)");
  } else {
    for (float x : floats(hb.acts.h0, NH)) ASSERT_TRUE(std::isnan(x)) << "h0 written without keep_h0";
  }
  for (auto [p, n, what] :
       {std::tuple{hb.acts.ln_mean, size_t(N), "mean"}, std::tuple{hb.acts.ln_rstd, size_t(N), "rstd"}}) {
    EXPECT_TRUE(all_close(floats(p, n), std::vector<float>(p, p + n))) << what;
  }
  if (hb.acts.h1_bf16 == nullptr) {
    EXPECT_TRUE(all_close(floats(hb.acts.h1, NH), std::vector<float>(hb.acts.h1, hb.acts.h1 + NH))) << "h1";
    return;
  }
  std::vector<Bf16> copy(NH);
  std::memcpy(copy.data(), got.data() + at(hb.acts.h1_bf16), NH * sizeof(Bf16));
  for (size_t i = 0; i < NH; ++i) {
    const float want = hb.acts.h1[i];
    ASSERT_LE(std::fabs(to_float(copy[i]) - want), std::ldexp(std::fabs(want), -7) + 1e-6f) << "h1_bf16 @" << i;
  }
  for (float x : floats(hb.acts.h1, NH)) ASSERT_TRUE(std::isnan(x)) << "h1 written beside its copy";
}

TEST(RolloutStartCuda, MatchesHostTwin) {
  GRPO_REQUIRE_DEVICE();
  for (const bool keep_h0 : {true, false}) expect_start_matches_host_twin(tiny_config(), keep_h0);
}

TEST(RolloutStartCuda, MatchesHostTwinAtARaggedWidthAndInBf16) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 37;  // not a multiple of 4: the scalar path, a partial last group
  c.batch_size = 3;
  expect_start_matches_host_twin(c, true);
  c.hidden_size = 1030;  // two groups a thread and more
  c.precision = Precision::Bf16;
  expect_start_matches_host_twin(c, false);
}

}  // namespace
}  // namespace grpo::test
