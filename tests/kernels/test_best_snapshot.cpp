// The best-state snapshot's host twin (kernels/best_snapshot.h): a new best copies params, m and
// v and the scalars with the score as best score; any other score leaves the poisoned snapshot
// untouched. Fresh random slabs each run.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/best_snapshot.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

TEST(BestSnapshot, CopiesParamsAndMomentsOnANewBestOnly) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const size_t n = 1000 + seed % 77;
  const auto slabs = random_floats(4 * n, seed);
  TrainScalars s = train_scalars_start(1e-3f, 7, 21);
  for (float score : {-3.f, 2.5f}) {
    s.best_score = 0.f;
    s.score = score;
    std::vector<float> best = poisoned(3 * n);
    TrainScalars bs;
    std::memset(&bs, 0xAB, sizeof bs);
    const TrainScalars untouched = bs;
    best_snapshot_host(&s, slabs.data(), n, best.data(), &bs);
    if (score <= s.best_score) {
      for (float x : best) ASSERT_TRUE(std::isnan(x));
      EXPECT_EQ(std::memcmp(&bs, &untouched, sizeof bs), 0);
      continue;
    }
    EXPECT_EQ(std::memcmp(best.data(), slabs.data(), n * 4), 0) << "params";
    EXPECT_EQ(std::memcmp(best.data() + n, slabs.data() + 2 * n, 2 * n * 4), 0) << "m and v";
    EXPECT_EQ(bs.best_score, score);
    EXPECT_EQ(bs.epoch, 7u);
    EXPECT_EQ(bs.adam_step, 21u);
  }
}

TEST(BestSnapshot, AdvanceScheduleMovesTheBestScore) {
  TrainScalars s = train_scalars_start(1e-3f);
  EXPECT_EQ(s.best_score, std::numeric_limits<float>::lowest());
  s.score = -20.f;
  EXPECT_TRUE(is_new_best(s));
  advance_schedule_host(&s);
  EXPECT_EQ(s.best_score, -20.f);
  s.score = -25.f;
  EXPECT_FALSE(is_new_best(s));
  advance_schedule_host(&s);
  EXPECT_EQ(s.best_score, -20.f);
}

}  // namespace
}  // namespace grpo::test
