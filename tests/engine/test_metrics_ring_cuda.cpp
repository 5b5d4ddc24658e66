// The epoch's last kernel (end_epoch_cuda) against the four it replaces: mean_f32_cuda's two,
// snapshot_metrics_cuda and advance_schedule_cuda, to the byte, in the scalars and in the ring.
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/metrics_ring.h"
#include "kernels/reduce.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

// N from one game to the first stage's grid-stride loop (past 256 x 256), through the presets'
// 136 and 544; epochs on every slot of the ring; an update that was skipped and one that was not.
TEST(MetricsRingCuda, EndEpochIsTheRewardMeanTheSnapshotAndTheSchedule) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const int sizes[] = {1, 136, 257, 544, 70001};
  for (size_t k = 0; k < std::size(sizes); ++k) {
    const int N = sizes[k];
    const auto rewards = random_floats(size_t(N), seed + k, -2.f, 2.f);
    DeviceBuffer<float> d_rewards(rewards);
    for (uint32_t nonfinite : {0u, 1u}) {
      SCOPED_TRACE(::testing::Message() << "N " << N << ", nonfinite " << nonfinite);
      TrainScalars s = train_scalars_start(5e-4f, uint32_t(999 + k), 41, 200);
      s.nonfinite = nonfinite;
      s.score = 3.5f;
      s.best_score = 2.f;
      s.reward = poison_value();
      const std::vector<TrainScalars> ring(kMetricsRing, TrainScalars{});
      DeviceBuffer<TrainScalars> want_s(std::vector<TrainScalars>{s}), got_s(std::vector<TrainScalars>{s});
      DeviceBuffer<TrainScalars> want_ring(ring), got_ring(ring);
      DeviceBuffer<float> scratch(poisoned(mean_scratch_floats(N)));
      TrainScalars* ws = want_s.get();
      mean_f32_cuda(d_rewards.get(), N, &ws->reward, scratch.get(), nullptr);
      snapshot_metrics_cuda(ws, want_ring.get(), nullptr);
      advance_schedule_cuda(ws, nullptr);
      end_epoch_cuda(d_rewards.get(), N, got_s.get(), got_ring.get(), nullptr);
      const TrainScalars a = want_s.download()[0], b = got_s.download()[0];
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "reward " << a.reward << " against " << b.reward;
      EXPECT_EQ(b.epoch, s.epoch + 1) << "the schedule moved on";
      const auto wr = want_ring.download(), gr = got_ring.download();
      EXPECT_EQ(std::memcmp(wr.data(), gr.data(), wr.size() * sizeof(TrainScalars)), 0);
      EXPECT_EQ(gr[s.epoch % kMetricsRing].epoch, s.epoch) << "the slot of the epoch that ended";
    }
  }
}

TEST(MetricsRingCuda, EndEpochRefusesNoGames) {
  GRPO_REQUIRE_DEVICE();
  EXPECT_THROW(end_epoch_cuda(nullptr, 0, nullptr, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo::test
