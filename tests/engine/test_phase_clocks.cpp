// The host's reading of phase clocks (core/phase_clock.h): phase k of a step from its mark k to
// the next, the last phase to the next step's first mark (or, for a launch a step, no phase past
// the last mark), medians over the steps whose marks are all there; a step with a mark missing,
// and with NextStep the last step (no next one), count for nothing. The spans: each cluster's
// from its blocks' first start to their last end, and which blocks ran on an SM at once.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/phase_clock.h"

namespace grpo {
namespace {

TEST(PhaseClocks, MedianOfOddEvenAndNone) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({5.0}), 5.0);
  EXPECT_EQ(median({9.0, 1.0, 4.0}), 4.0);
  EXPECT_EQ(median({8.0, 2.0, 6.0, 4.0}), 5.0);
}

TEST(PhaseClocks, PhasesRunFromMarkToMarkAndSkipIncompleteSteps) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<long long> base(0, 1ll << 40);
  PhaseClocks c;
  c.blocks = 2, c.steps = 6, c.marks = 3, c.warps = 2;
  std::vector<long long> at(c.size(), kUnmarked);
  // Block 1, warp 1: step t starts at s0 + 1000 t (+ 500 from step 3 on), its marks at +10 and
  // +30 (+ t at the second); step 2 lacks its second mark.
  const long long s0 = base(rng);
  for (unsigned t = 0; t < c.steps; ++t) {
    const long long start = s0 + 1000 * t + (t >= 3 ? 500 : 0);
    at[c.index(1, t, 0, 1)] = start;
    if (t != 2) at[c.index(1, t, 1, 1)] = start + 10;
    at[c.index(1, t, 2, 1)] = start + 30 + t;
  }
  const PhaseMedians m = phase_medians(at, c, 1, 1);
  // Steps 0, 1, 3 and 4 count: phase 1 is 20 + t (20, 21, 23, 24), phase 2 runs to the next start
  // (970 - t: 970, 969, 967, 966), every step 1000; the 1,500 from step 2 to 3 is step 2's.
  ASSERT_EQ(m.steps, 4u);
  ASSERT_EQ(m.phase.size(), 3u);
  EXPECT_EQ(m.phase[0], 10.0);
  EXPECT_EQ(m.phase[1], 22.0);
  EXPECT_EQ(m.phase[2], 968.0);
  EXPECT_EQ(m.step, 1000.0);
  // Another block's and warp's clocks are their own: nothing marked there.
  const PhaseMedians none = phase_medians(at, c, 0, 1);
  EXPECT_EQ(none.steps, 0u);
  EXPECT_EQ(none.step, 0.0);
  // A buffer shorter than the layout says reads nothing.
  at.pop_back();
  EXPECT_EQ(phase_medians(at, c, 1, 1).steps, 0u);
}

// A launch a step (PhaseEnd::LastMark): the phases end at each step's last mark, the gap to the
// next step's first is no phase's, and the last step counts too.
TEST(PhaseClocks, PhasesEndAtTheLastMarkWhenEachStepIsALaunch) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<long long> base(0, 1ll << 40), gap(0, 1ll << 30);
  PhaseClocks c;
  c.blocks = 1, c.steps = 5, c.marks = 4, c.warps = 1;
  std::vector<long long> at(c.size(), kUnmarked);
  // Step t starts anywhere (another SM's counter); its marks at +7, +7 + 2t and +100 + 3t past
  // that; step 1 lacks its last mark.
  for (unsigned t = 0; t < c.steps; ++t) {
    const long long start = base(rng) + gap(rng);
    at[c.index(0, t, 0, 0)] = start;
    at[c.index(0, t, 1, 0)] = start + 7;
    at[c.index(0, t, 2, 0)] = start + 7 + 2 * t;
    if (t != 1) at[c.index(0, t, 3, 0)] = start + 100 + 3 * t;
  }
  const PhaseMedians m = phase_medians(at, c, 0, 0, PhaseEnd::LastMark);
  // Steps 0, 2, 3 and 4: phase 1 is 2t (0, 4, 6, 8), phase 2 93 + t (93, 95, 96, 97), the step
  // 100 + 3t (100, 106, 109, 112).
  ASSERT_EQ(m.steps, 4u);
  ASSERT_EQ(m.phase.size(), 3u);
  EXPECT_EQ(m.phase[0], 7.0);
  EXPECT_EQ(m.phase[1], 5.0);
  EXPECT_EQ(m.phase[2], 95.5);
  EXPECT_EQ(m.step, 107.5);
  // Read the other way, each last phase would run to the next step's start: anything at all.
  EXPECT_EQ(phase_medians(at, c, 0, 0).phase.size(), 4u);
}

// Three clusters of two blocks at a random base time: cluster 0 alone on SMs 0 and 1; cluster 1
// on SMs 2 and 3, where block 3 overlaps block 4 of cluster 2 (SM 3 runs two blocks at once);
// block 5 runs on SM 0 after block 0 ended there (the same SM, not at once); block 7, past the
// last whole cluster, and a block that lacks a mark count for nothing.
TEST(PhaseClocks, ClusterSpansAndTheSmsThatRanTwoBlocksAtOnce) {
  std::mt19937 rng(std::random_device{}());
  const long long t0 = std::uniform_int_distribution<long long>(0, 1ll << 40)(rng);
  const auto span = [&](long long sm, long long start, long long end) {
    return std::vector<long long>{sm, t0 + start, t0 + end};
  };
  std::vector<long long> at;
  for (const auto& b : {span(0, 0, 100), span(1, 5, 120),      // cluster 0: 120
                        span(2, 10, 200), span(3, 12, 180),    // cluster 1: 190, block 3 shares SM 3
                        span(3, 150, 400), span(0, 101, 390),  // cluster 2: 299, block 4 shares SM 3
                        span(5, 0, 10)})                       // block 6 of a cluster without block 7
    at.insert(at.end(), b.begin(), b.end());
  const ClusterSpans cs = cluster_spans(at, 2);
  EXPECT_EQ(cs.blocks, 7u);
  EXPECT_EQ(cs.sms, 5u);         // 0, 1, 2, 3, 5
  EXPECT_EQ(cs.shared_sms, 1u);  // 3
  EXPECT_EQ(cs.ns, (std::vector<double>{120, 190, 299}));
  EXPECT_EQ(cs.shares, (std::vector<bool>{false, true, true}));
  // Block 2 without its end: cluster 1 counts for nothing and SM 2 drops out; block 4 still
  // shares SM 3 with block 3, so cluster 2 still shares.
  at[2 * kSpanFields + kSpanEnd] = kUnmarked;
  const ClusterSpans partial = cluster_spans(at, 2);
  EXPECT_EQ(partial.blocks, 6u);
  EXPECT_EQ(partial.ns, (std::vector<double>{120, 299}));
  EXPECT_EQ(partial.shares, (std::vector<bool>{false, true}));
  EXPECT_EQ(partial.sms, 4u);
}

}  // namespace
}  // namespace grpo
