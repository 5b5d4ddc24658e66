// The rollout as a WHILE graph node (engine/cuda/rollout_loop_cuda.cpp) against the same rollout run
// eagerly (Ops::rollout's default: one product and one fused step launched per step). From the
// same arena (random parameters, everything else poisoned), a captured rollout's replay must
// leave every byte of the arena as the eager run did, and again on a second replay over a freshly
// poisoned arena (the loop's counter and condition start over at every launch). The loop's body
// holds the two nodes of each of kRolloutLoopStepsPerTrip steps, run until T - 1 steps have run
// (the last trip's surplus steps do nothing); the graph's own node count does not grow with T.
// Fresh parameters each run; the seed is printed on failure.
#include <random>
#include <vector>

#include "engine/cuda/rollout_step.h"
#include "tests/engine/rollout_arena_util.h"

namespace grpo::test {
namespace {

// Trips of the loop for a rollout of T steps (T - 1 looped).
size_t trips(int T) { return (size_t(T - 1) + kRolloutLoopStepsPerTrip - 1) / kRolloutLoopStepsPerTrip; }

void expect_loop_matches_eager(TrainConfig c) {
  c.rollout_loop = true;
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, " << c.max_steps << " steps, " << precision_name(c.precision));
  c.seed = seed;
  const ArenaLayout al(c);
  const std::vector<float> slabs = random_slabs(c, seed);
  const uint32_t epoch = uint32_t(seed % 1000);
  const std::vector<char> image = poisoned_arena(c, epoch);

  const Outcome eager = run_rollout(c, image, slabs, false);
  const Outcome graph = run_rollout(c, image, slabs, true, 2);
  EXPECT_EQ(graph.loop.nodes, 2u * kRolloutLoopStepsPerTrip) << "the body: the product and the fused step, a trip's";
  EXPECT_EQ(graph.loop.runs, graph.loop.nodes * trips(c.max_steps));
  ASSERT_EQ(graph.arena.size(), eager.arena.size());
  const size_t first_diff = first_difference(eager.arena, graph.arena);
  EXPECT_EQ(first_diff, eager.arena.size())
      << "the replayed rollout differs from the eager one at byte " << first_diff << " of " << eager.arena.size();
  // The rollout ran: every action of every step was written.
  std::vector<int32_t> actions(size_t(c.max_steps) * c.games());
  std::memcpy(actions.data(), eager.arena.data() + al.actions, actions.size() * sizeof(int32_t));
  for (int32_t a : actions) ASSERT_TRUE(a >= 0 && a < kActions) << a;

  // As training runs it where the loss pass recomputes h0: no h0 rows after step 0's, the rest
  // the same bytes, eagerly and replayed.
  expect_same_without_h0(c, eager.arena, run_rollout(c, image, slabs, false, 1, nullptr, false).arena, "eager");
  expect_same_without_h0(c, eager.arena, run_rollout(c, image, slabs, true, 2, nullptr, false).arena, "replayed");

  // A trip more, the same graph outside the loop.
  TrainConfig longer = c;
  longer.max_steps = c.max_steps + int(kRolloutLoopStepsPerTrip);
  const Outcome more = run_rollout(longer, poisoned_arena(longer, epoch), slabs, true);
  EXPECT_EQ(more.top_nodes, graph.top_nodes);
  EXPECT_EQ(more.loop.runs, graph.loop.runs + graph.loop.nodes);
}

TEST(RolloutLoopCuda, ReplayEqualsEagerAtARaggedHiddenSize) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 37;  // not a multiple of 4: the kernels' scalar paths
  c.max_steps = 11;    // a whole trip, then 2 steps and 6 that do nothing
  expect_loop_matches_eager(c);
}

TEST(RolloutLoopCuda, ReplayEqualsEagerInBf16) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 64;
  c.max_steps = 4;  // 3 steps and 5 that do nothing
  c.precision = Precision::Bf16;
  expect_loop_matches_eager(c);
}

// Under TF32 the product is cuBLASLt's, which reads fixed pointers: the rollout stays two nodes
// a step, and still equals the eager run.
TEST(RolloutLoopCuda, Tf32KeepsTheUnrolledSteps) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 32;
  c.max_steps = 3;
  c.precision = Precision::Tf32;
  c.rollout_loop = true;  // asked for, and not taken
  c.seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << c.seed);
  const std::vector<float> slabs = random_slabs(c, c.seed);
  const std::vector<char> image = poisoned_arena(c, 0);
  const Outcome eager = run_rollout(c, image, slabs, false);
  const Outcome graph = run_rollout(c, image, slabs, true);
  EXPECT_EQ(graph.loop.nodes, 0u);
  EXPECT_GE(graph.top_nodes, 2u * c.max_steps);
  EXPECT_TRUE(graph.arena == eager.arena);
}

}  // namespace
}  // namespace grpo::test
