// The best-state snapshot kernel against its host twin, bit for bit, on a new best and not.
#include <cstring>
#include <random>
#include <vector>

#include "kernels/best_snapshot.h"
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

}  // namespace
}  // namespace grpo::test
