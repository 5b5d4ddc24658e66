// HostOps' rollout (groups of games from the first step to the last, engine/host/rollout.cpp)
// against Ops::rollout's step-by-step loop on the same HostOps: the same actions, rewards,
// observations and game state bit for bit, and the same activations (the products may round
// differently with 8 rows than with all of them). Dropout on; the arena starts poisoned.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/host/ops.h"
#include "engine/step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct RolloutRun {
  std::vector<float> obs, rewards, h1, a1, logits;
  std::vector<int32_t> actions, score;
};

RolloutRun rollout(const TrainConfig& c, bool groups) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  std::vector<float> slabs(4 * pl.total, 0.f);
  const auto w = random_floats(pl.total, 5, -0.4f, 0.4f);
  std::copy(w.begin(), w.end(), slabs.begin());
  std::vector<float> arena_f((al.total + 3) / 4 + 16, poison_value());
  void* arena = arena_f.data() + (16 - reinterpret_cast<uintptr_t>(arena_f.data()) % 64 / 4) % 16;
  const StepBuffers b = StepBuffers::over(slabs.data(), arena, c);
  b.scalars->epoch = 3;
  const int T = c.max_steps, N = c.games(), D = c.obs_dim(), H = c.hidden_size;
  HostOps ops(c.game, c.batch_size);
  ops.weights_unchanged(b.p.fc1_w, H, H);
  const Ops::Rollout r{b.p,       b.acts, b.obs, b.actions, b.rewards, b.games, c.seed, &b.scalars->epoch,
                       c.dropout, T,      N,     D,         H};
  if (groups)
    ops.rollout(r);
  else
    ops.Ops::rollout(r);
  const size_t M = size_t(T) * N;
  RolloutRun out;
  out.obs.assign(b.obs, b.obs + M * D);
  out.rewards.assign(b.rewards, b.rewards + M);
  out.actions.assign(b.actions, b.actions + M);
  out.h1.assign(b.acts.h1, b.acts.h1 + M * H);
  out.a1.assign(b.acts.a1, b.acts.a1 + M * H);
  out.logits.assign(b.acts.logits, b.acts.logits + M * kActions);
  out.score.assign(b.games.score, b.games.score + N);
  return out;
}

TEST(Rollout, GroupsOfGamesMatchTheStepByStepLoop) {
  TrainConfig c = tiny_config();
  c.hidden_size = 40;
  c.batch_size = 47;  // 141 games: two groups of 70 and 71 (engine/host/rollout.cpp)
  c.max_steps = 12;
  SCOPED_TRACE(::testing::Message() << c.games() << " games");
  ASSERT_GE(c.games(), 128);
  ASSERT_NE(c.games() % 2, 0);
  const RolloutRun want = rollout(c, false), got = rollout(c, true);
  EXPECT_EQ(got.actions, want.actions);
  EXPECT_EQ(got.score, want.score);
  EXPECT_EQ(std::memcmp(got.rewards.data(), want.rewards.data(), want.rewards.size() * 4), 0) << "rewards";
  EXPECT_EQ(std::memcmp(got.obs.data(), want.obs.data(), want.obs.size() * 4), 0) << "observations";
  EXPECT_LE(rel_l2(got.h1, want.h1), 1e-6);
  EXPECT_LE(rel_l2(got.a1, want.a1), 1e-6);
  EXPECT_LE(rel_l2(got.logits, want.logits), 1e-6);
}

}  // namespace
}  // namespace grpo::test
