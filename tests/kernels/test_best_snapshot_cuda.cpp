// The best-state snapshot kernel against its host twin, bit for bit, on a new best and not; and
// the kernel that takes the epoch's score first against the mean's two kernels and the snapshot.
#include <cstring>
#include <random>
#include <vector>

#include "kernels/best_snapshot.h"
#include "kernels/reduce.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

TEST(BestSnapshotCuda, EqualsHostTwin) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const size_t n = 3000 + seed % 101;
  const auto slabs = random_floats(4 * n, seed);
  DeviceBuffer<float> d_slabs(slabs);
  for (float score : {1.f, -1.f}) {
    TrainScalars s = train_scalars_start(3e-4f, 12, 40, 200);
    s.best_score = 0.f;
    s.score = score;
    std::vector<float> want = poisoned(3 * n);
    TrainScalars want_s{};
    best_snapshot_host(&s, slabs.data(), n, want.data(), &want_s);
    DeviceBuffer<float> d_best(poisoned(3 * n));
    DeviceBuffer<TrainScalars> d_s(std::vector<TrainScalars>{s}), d_bs(std::vector<TrainScalars>{TrainScalars{}});
    best_snapshot_cuda(d_s.get(), d_slabs.get(), n, d_best.get(), d_bs.get(), nullptr);
    const auto got = d_best.download();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << "score " << score;
    const TrainScalars got_s = d_bs.download()[0];
    EXPECT_EQ(std::memcmp(&got_s, &want_s, sizeof got_s), 0) << "score " << score;
  }
}

// score_and_best_snapshot_cuda is mean_i32_cuda then best_snapshot_cuda, to the byte: the
// scalars, the snapshot, and the slabs' copy, with a best below the mean (a new best) and above
// it. N from one game to the first-stage grid-stride loop (past 256 x 256), through the
// presets' 136 and 544.
TEST(BestSnapshotCuda, ScoreThenSnapshotIsTheMeanAndTheSnapshot) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 gen(seed);
  const size_t n = 1000 + seed % 37;
  const auto slabs = random_floats(4 * n, seed + 1);
  DeviceBuffer<float> d_slabs(slabs);
  for (int N : {1, 136, 257, 544, 70001}) {
    std::vector<int32_t> scores(static_cast<size_t>(N));
    std::uniform_int_distribution<int32_t> d(-30, 90);
    for (auto& v : scores) v = d(gen);
    DeviceBuffer<int32_t> d_scores(scores);
    for (float best : {-100.f, 100.f}) {
      SCOPED_TRACE(::testing::Message() << "N " << N << ", best so far " << best);
      TrainScalars s = train_scalars_start(3e-4f, 7, 30, 200);
      s.best_score = best;
      s.score = poison_value();
      DeviceBuffer<TrainScalars> want_s(std::vector<TrainScalars>{s}), got_s(std::vector<TrainScalars>{s});
      DeviceBuffer<TrainScalars> want_bs(std::vector<TrainScalars>{TrainScalars{}}),
          got_bs(std::vector<TrainScalars>{TrainScalars{}});
      DeviceBuffer<float> want_best(poisoned(3 * n)), got_best(poisoned(3 * n));
      DeviceBuffer<float> scratch(poisoned(mean_scratch_floats(N)));
      TrainScalars* ws = want_s.get();
      mean_i32_cuda(d_scores.get(), N, &ws->score, scratch.get(), nullptr);
      best_snapshot_cuda(ws, d_slabs.get(), n, want_best.get(), want_bs.get(), nullptr);
      score_and_best_snapshot_cuda(d_scores.get(), N, got_s.get(), d_slabs.get(), n, got_best.get(), got_bs.get(),
                                   nullptr);
      const TrainScalars a = want_s.download()[0], b = got_s.download()[0];
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "score " << a.score << " against " << b.score;
      const TrainScalars abs = want_bs.download()[0], bbs = got_bs.download()[0];
      EXPECT_EQ(std::memcmp(&abs, &bbs, sizeof abs), 0);
      const auto wb = want_best.download(), gb = got_best.download();
      EXPECT_EQ(std::memcmp(wb.data(), gb.data(), wb.size() * 4), 0);
      EXPECT_EQ(beats_best(a.score, best), best < 0.f) << "both branches are taken";
    }
  }
}

}  // namespace
}  // namespace grpo::test
