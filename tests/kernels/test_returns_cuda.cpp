// Returns and advantages on the device vs their host twins.
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/returns.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;

TEST(ReturnsCuda, DiscountedReturnsEqualHostBitForBit) {
  GRPO_REQUIRE_DEVICE();
  // Ragged and whole tiles of the kernel's 32 steps, and the small preset's 200 x 136.
  for (auto [T, N] : {std::pair{1, 1}, {13, 37}, {50, 130}, {32, 5}, {33, 129}, {200, 136}}) {
    const auto r = random_floats(size_t(T) * N, 7 * T + N, -2.f, 2.f);
    std::vector<float> want(r.size());
    discounted_returns_host(r.data(), want.data(), T, N, 0.99f);
    DeviceBuffer<float> dr(r), out(poisoned(r.size()));
    discounted_returns_cuda(dr.get(), out.get(), T, N, 0.99f, nullptr);
    EXPECT_EQ(out.download(), want) << T << "x" << N;                   // one explicit fma per step on both sides
    discounted_returns_cuda(dr.get(), dr.get(), T, N, 0.99f, nullptr);  // in place
    EXPECT_EQ(dr.download(), want) << T << "x" << N;
  }
}

void check_normalize(const std::vector<float>& x, const char* what) {
  const int n = static_cast<int>(x.size());
  std::vector<float> want_adv(n), want_stats(2);
  normalize_advantages_host(x.data(), want_adv.data(), n, nullptr, want_stats.data());
  DeviceBuffer<float> dx(x), adv(poisoned(n)), stats(poisoned(2));
  DeviceBuffer<float> scratch(poisoned(normalize_advantages_scratch_floats(n)));
  normalize_advantages_cuda(dx.get(), adv.get(), n, scratch.get(), stats.get(), nullptr);
  const auto got_stats = stats.download();
  const auto got_adv = adv.download();
  EXPECT_LE(test::rel_l2(std::vector<float>{got_stats[0]}, std::vector<float>{want_stats[0]}), 1e-5) << what << n;
  EXPECT_LE(test::rel_l2(std::vector<float>{got_stats[1]}, std::vector<float>{want_stats[1]}), 1e-5) << what << n;
  EXPECT_TRUE(test::all_close(got_adv, want_adv)) << what << n;
  // The same inputs again: the same bits, whatever the schedule.
  DeviceBuffer<float> adv2(poisoned(n)), stats2(poisoned(2));
  normalize_advantages_cuda(dx.get(), adv2.get(), n, scratch.get(), stats2.get(), nullptr);
  EXPECT_EQ(std::memcmp(stats2.download().data(), got_stats.data(), 2 * sizeof(float)), 0) << what << n;
  EXPECT_EQ(std::memcmp(adv2.download().data(), got_adv.data(), n * sizeof(float)), 0) << what << n;
}

TEST(ReturnsCuda, NormalizeAdvantagesMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  for (int n : {2, 37, 1003, 20001}) {
    auto x = random_floats(n, 31 * n, -1.5f, 4.f);
    x[n / 2] = 25.f;  // an outlier the clamp cuts
    check_normalize(x, "typical n=");
  }
}

TEST(ReturnsCuda, StatisticsSurviveALargeMean) {
  GRPO_REQUIRE_DEVICE();
  for (int n : {37, 20001}) check_normalize(random_floats(n, n, 999.f, 1001.f), "mean 1e3 n=");
}

TEST(ReturnsCuda, GroupNormalizeMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  for (auto [T, G, R] : {std::tuple{1, 3, 2}, {13, 5, 8}, {200, 17, 8}, {3, 2, 300}}) {
    const size_t n = size_t(T) * G * R;
    auto r = random_floats(n, 77 + n, -1.f, 1.f);
    for (size_t i = 0; i < n; ++i) r[i] += 100.f * float(int(i % (G * R)) / R);  // group offsets up to 1e3
    std::vector<float> want(n), want_stats(2 * size_t(G));
    group_normalize_rewards_host(r.data(), want.data(), T, G, R, want_stats.data());
    DeviceBuffer<float> dr(r), out(poisoned(n)), stats(poisoned(2 * size_t(G)));
    group_normalize_rewards_cuda(dr.get(), out.get(), T, G, R, stats.get(), nullptr);
    const auto got = out.download();
    EXPECT_TRUE(test::all_close(got, want, 1e-4f, 1e-4f)) << T << "x" << G << "x" << R;
    EXPECT_TRUE(test::all_close(stats.download(), want_stats, 1e-5f, 1e-5f)) << T << "x" << G << "x" << R;
    group_normalize_rewards_cuda(dr.get(), dr.get(), T, G, R, nullptr, nullptr);  // in place, no statistics
    EXPECT_EQ(std::memcmp(dr.download().data(), got.data(), n * sizeof(float)), 0) << T << "x" << G << "x" << R;
  }
}

}  // namespace
}  // namespace grpo
