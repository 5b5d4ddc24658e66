// The rollout's phase clocks (core/phase_clock.h): on, they must change no byte of the rollout,
// and mark exactly the points each block passes, in order, at every step. The cluster kernel's
// (rollout_cluster.h's ClusterMark): all seven in a block with a game but at the last step (the
// first four there), none of the head's and the game's in a block without one; and every block's
// span, none past the grid. The fused step's
// (rollout_step.h's StepMark), a launch a step: all five but at the last step (no game's there).
// Fresh parameters each run; the seed is printed on failure.
#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "core/phase_clock.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_step.h"
#include "engine/policy.h"
#include "tests/engine/rollout_arena_util.h"

namespace grpo::test {
namespace {

RolloutRun cluster_run(const GameConfig& game, ClusterProduct product, const PhaseClocks& clocks) {
  return [game, product, clocks](CudaOps& ops, const Ops::Rollout& r, cudaStream_t stream) {
    ops.rollout_start(r);
    rollout_cluster_cuda(game, rollout_step_at(r, 0), r.T, stream, product, 1, clocks);
  };
}

// Whether block `rank` of the one cluster marks `mark` at step t of T, where it plays a game
// (has_game) or not.
bool marked(unsigned mark, bool has_game, unsigned t, unsigned T) {
  const bool last = t + 1 == T;
  if (mark == kMarkHead || mark == kMarkOutcome) return has_game;
  if (mark == kMarkGame || mark == kMarkStats) return has_game && !last;
  if (mark == kMarkTrunk || mark == kMarkH1) return !last;
  return true;
}

// The rollout of c from fresh parameters (c.seed's), run with_clocks({}) and then with clocks in
// a buffer of pc's layout: the same bytes both ways. Returns the marks.
// With pc.span_blocks set, the spans too, into *spans.
std::vector<long long> clocked_marks(const TrainConfig& c, PhaseClocks pc,
                                     const std::function<RolloutRun(const PhaseClocks&)>& with_clocks,
                                     std::vector<long long>* spans = nullptr) {
  const std::vector<float> slabs = random_slabs(c, c.seed);
  const std::vector<char> image = poisoned_arena(c, uint32_t(c.seed % 1000));
  const Outcome plain = run_rollout(c, image, slabs, false, 1, with_clocks({}));
  DeviceBuffer<long long> buffer(std::vector<long long>(pc.size(), kUnmarked));
  DeviceBuffer<long long> span_buffer(std::vector<long long>(std::max<size_t>(pc.spans_size(), 1), kUnmarked));
  pc.at = buffer.get();
  if (pc.span_blocks) pc.spans = span_buffer.get();
  const Outcome clocked = run_rollout(c, image, slabs, false, 1, with_clocks(pc));
  EXPECT_EQ(first_difference(plain.arena, clocked.arena), plain.arena.size()) << "the clocks changed the rollout";
  if (spans) *spans = span_buffer.download();
  return buffer.download();
}

// In pc's buffer `at`: for every block and warp the clocks cover, each mark k of step t that
// marked(b, t, k) says block b passes is there, no other, and each at or after the one before it
// (across the steps of one launch with across_steps, else within each step's own launch).
void expect_marks_in_order(const std::vector<long long>& at, const PhaseClocks& pc, bool across_steps,
                           const std::function<bool(unsigned b, unsigned t, unsigned k)>& marked) {
  for (unsigned b = 0; b < pc.blocks; ++b)
    for (unsigned w = 0; w < pc.warps; ++w) {
      long long before = kUnmarked;
      for (unsigned t = 0; t < pc.steps; ++t) {
        if (!across_steps) before = kUnmarked;
        for (unsigned k = 0; k < pc.marks; ++k) {
          const long long v = at[pc.index(b, t, k, w)];
          SCOPED_TRACE(::testing::Message() << "block " << b << ", warp " << w << ", step " << t << ", mark " << k);
          if (!marked(b, t, k)) {
            EXPECT_EQ(v, kUnmarked);
            continue;
          }
          ASSERT_NE(v, kUnmarked);
          EXPECT_GE(v, before) << "a mark before the one it follows";
          before = v;
        }
      }
    }
}

void expect_clocks_mark_the_steps(TrainConfig c, ClusterProduct product) {
  c.seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << c.seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, " << c.max_steps << " steps, " << precision_name(c.precision));
  const unsigned T = unsigned(c.max_steps), N = unsigned(c.games());
  PhaseClocks pc;
  pc.blocks = kClusterBlocks, pc.steps = T, pc.marks = kClusterMarks, pc.warps = kClusterWarps;
  pc.span_blocks = kClusterBlocks + 1;  // one block past the launch's one cluster: never marked
  std::vector<long long> spans;
  const std::vector<long long> at = clocked_marks(
      c, pc, [&](const PhaseClocks& clocks) { return cluster_run(c.game, product, clocks); }, &spans);
  // Every block's span, none past the grid.
  ASSERT_EQ(spans.size(), pc.spans_size());
  for (unsigned b = 0; b < pc.span_blocks; ++b) {
    SCOPED_TRACE(::testing::Message() << "span of block " << b);
    const long long* s = spans.data() + size_t(b) * kSpanFields;
    if (b >= kClusterBlocks) {
      EXPECT_EQ(std::count(s, s + kSpanFields, kUnmarked), kSpanFields);
      continue;
    }
    ASSERT_EQ(std::count(s, s + kSpanFields, kUnmarked), 0);
    EXPECT_GE(s[kSpanSm], 0);
    EXPECT_LE(s[kSpanStart], s[kSpanEnd]);  // the global timer (a microsecond a tick on some GPUs), not clock64
  }
  const ClusterSpans cs = cluster_spans(spans, kClusterBlocks);
  EXPECT_EQ(cs.blocks, size_t(kClusterBlocks));
  ASSERT_EQ(cs.ns.size(), 1u);
  EXPECT_GT(cs.ns[0], 0.0);
  expect_marks_in_order(at, pc, true, [&](unsigned b, unsigned t, unsigned k) { return marked(k, b < N, t, T); });
  const PhaseMedians block0 = phase_medians(at, pc, 0, 0);
  EXPECT_EQ(block0.steps, size_t(T - 1)) << "every step but the last has all its phases";
}

// fp32: 12 games in one cluster, so blocks 0-3 play two games (the marks are the first's).
TEST(RolloutClusterCuda, PhaseClocksMarkEveryStepAndChangeNothing) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 64, c.batch_size = 4, c.max_steps = 4;
  ASSERT_EQ(c.games(), 12);
  expect_clocks_mark_the_steps(c, ClusterProduct::Fma);
}

// bf16 on tensor cores: 6 games, so blocks 6 and 7 have none.
TEST(RolloutClusterCuda, PhaseClocksOfBlocksWithoutAGame) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 64, c.batch_size = 2, c.max_steps = 3, c.precision = Precision::Bf16;
  ASSERT_EQ(c.games(), 6);
  expect_clocks_mark_the_steps(c, ClusterProduct::TensorCores);
}

// The steps on one stream, as CudaOps runs them, with the fused step's clocks on.
RolloutRun stepwise_run(const PhaseClocks& clocks) {
  return [clocks](CudaOps& ops, const Ops::Rollout& r, cudaStream_t) {
    ops.set_step_clocks(clocks);
    ops.rollout(r);
    ops.set_step_clocks({});
  };
}

// 15 games at hidden 40 in bf16 (the reference's precision): the clocks cover blocks 0-3 only;
// too many marks are refused.
TEST(RolloutStepCuda, PhaseClocksMarkEveryStepAndChangeNothing) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 40, c.batch_size = 5, c.max_steps = 4, c.precision = Precision::Bf16;
  ASSERT_EQ(c.games(), 15);
  c.seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << c.seed);
  const unsigned T = unsigned(c.max_steps);
  PhaseClocks pc;
  pc.blocks = 4, pc.steps = T, pc.marks = kStepMarks, pc.warps = 4;
  ASSERT_GT(unsigned(c.games()), pc.blocks);
  const std::vector<long long> at = clocked_marks(c, pc, stepwise_run);
  // A launch a step, whose clocks compare within it only; the last step has no trunk.
  expect_marks_in_order(at, pc, false,
                        [&](unsigned, unsigned t, unsigned k) { return k != kStepMarkGame || t + 1 < T; });
  const PhaseMedians block0 = phase_medians(at, pc, 0, 0, PhaseEnd::LastMark);
  EXPECT_EQ(block0.steps, size_t(T - 1)) << "every step but the last has all its phases";
  ASSERT_EQ(block0.phase.size(), size_t(kStepMarks - 1));
  EXPECT_EQ(sizeof(kStepPhases) / sizeof(kStepPhases[0]), block0.phase.size());
  PhaseClocks wide = pc;
  wide.marks = kStepMarks + 1;
  DeviceBuffer<long long> buffer(std::vector<long long>(wide.size(), kUnmarked));
  wide.at = buffer.get();
  EXPECT_THROW(run_rollout(c, poisoned_arena(c, 1), random_slabs(c, c.seed), false, 1, stepwise_run(wide)),
               std::invalid_argument);
}

}  // namespace
}  // namespace grpo::test
