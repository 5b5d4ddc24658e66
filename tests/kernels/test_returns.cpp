// Host twins of returns and advantages vs first principles in double.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/returns.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::poisoned;
using test::random_floats;

TEST(Returns, DiscountedReturnsMatchDouble) {
  for (auto [T, N] : {std::pair{1, 1}, {13, 37}, {100, 5}}) {
    const auto r = random_floats(size_t(T) * N, T * 100 + N, -2.f, 2.f);
    auto got = poisoned(r.size());
    discounted_returns_host(r.data(), got.data(), T, N, 0.99f);
    std::vector<float> ref(r.size());
    for (int g = 0; g < N; ++g) {
      double R = 0;
      for (int t = T - 1; t >= 0; --t) ref[size_t(t) * N + g] = float(R = r[size_t(t) * N + g] + 0.99 * R);
    }
    EXPECT_TRUE(all_close(got, ref)) << T << "x" << N;
    auto in_place = r;  // returns may alias rewards
    discounted_returns_host(in_place.data(), in_place.data(), T, N, 0.99f);
    EXPECT_EQ(in_place, got);
  }
}

struct Stats {
  double mean, std;
};
Stats two_pass(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m += v;
  m /= x.size();
  double ss = 0;
  for (float v : x) ss += (v - m) * (v - m);
  return {m, std::sqrt(ss / (x.size() - 1))};
}

TEST(Returns, StatisticsSurviveALargeMean) {
  // Around 1e3 with unit noise: E[x^2] - E[x]^2 in float would cancel almost every digit.
  for (int n : {2, 37, 1003, 54401}) {
    const auto x = random_floats(n, n, 999.f, 1001.f);
    auto adv = poisoned(n);
    float stats[2] = {test::poison_value(), test::poison_value()};
    normalize_advantages_host(x.data(), adv.data(), n, nullptr, stats);
    const Stats s = two_pass(x);
    EXPECT_NEAR(stats[0], s.mean, 1e-6 * s.mean) << n;
    EXPECT_NEAR(stats[1], s.std, 1e-5 * s.std) << n;
  }
}

TEST(Returns, AdvantagesFollowTheReference) {
  // Spread above and below the 0.5 floor on the std, and values the +-2 clamp must cut.
  for (float spread : {0.3f, 4.f}) {
    const int n = 1003;
    auto x = random_floats(n, 77, -spread, 2 * spread);
    x[10] = 30 * spread;  // outliers for the clamp
    x[500] = -30 * spread;
    auto adv = poisoned(n);
    float stats[2];
    normalize_advantages_host(x.data(), adv.data(), n, nullptr, stats);
    const Stats s = two_pass(x);
    std::vector<float> ref(n);
    for (int i = 0; i < n; ++i)
      ref[i] = float(std::clamp((x[i] - 0.5 * s.mean) / (std::max(s.std, 0.5) + 1e-6), -2.0, 2.0));
    EXPECT_TRUE(all_close(adv, ref)) << "spread " << spread;
    if (spread > 1) {
      EXPECT_EQ(adv[10], 2.f);
      EXPECT_EQ(adv[500], -2.f);
    }
  }
}

TEST(Returns, RejectsCountsWithoutASampleStd) {
  float x[1] = {1.f}, adv[1], stats[2];
  EXPECT_THROW(normalize_advantages_host(x, adv, 1, nullptr, stats), std::invalid_argument);
  EXPECT_THROW(discounted_returns_host(x, adv, -1, 1, 0.99f), std::invalid_argument);
}

// Group g's rewards: rows t N + g R + j of a [T, N] array (N = G R).
std::vector<float> group_of(const std::vector<float>& x, int T, int G, int R, int g) {
  std::vector<float> v;
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < R; ++j) v.push_back(x[size_t(t) * G * R + size_t(g) * R + j]);
  return v;
}

TEST(Returns, GroupNormalizedRewardsHaveZeroMeanUnitStdPerGroup) {
  for (auto [T, G, R] : {std::tuple{1, 3, 2}, {13, 5, 8}, {200, 17, 8}, {7, 2, 1}}) {
    auto r = random_floats(size_t(T) * G * R, 1000 + T * G * R, -2.f, 2.f);
    for (int g = 0; g < G; ++g)  // groups on different scales and offsets
      for (size_t i = 0; i < r.size(); ++i)
        if (int(i % (G * R)) / R == g) r[i] = r[i] * float(g + 1) + float(3 * g);
    auto out = poisoned(r.size()), stats = poisoned(2 * size_t(G));
    group_normalize_rewards_host(r.data(), out.data(), T, G, R, stats.data());
    for (int g = 0; g < G; ++g) {
      const Stats want = two_pass(group_of(r, T, G, R, g));
      EXPECT_NEAR(stats[2 * g], want.mean, 1e-5 * (1 + std::fabs(want.mean))) << g;
      EXPECT_NEAR(stats[2 * g + 1], want.std, 1e-5 * want.std) << g;
      const Stats got = two_pass(group_of(out, T, G, R, g));
      EXPECT_NEAR(got.mean, 0.0, 1e-5) << T << "x" << G << "x" << R << " group " << g;
      EXPECT_NEAR(got.std, 1.0, 1e-5) << T << "x" << G << "x" << R << " group " << g;
    }
    auto in_place = r;  // out may alias rewards
    group_normalize_rewards_host(in_place.data(), in_place.data(), T, G, R, nullptr);
    EXPECT_EQ(in_place, out);
  }
}

TEST(Returns, GroupOfEqualRewardsNormalizesToZero) {
  const int T = 4, G = 2, R = 3;
  std::vector<float> r(T * G * R, 0.37f);
  for (int t = 0; t < T; ++t) r[t * G * R + R] = float(t);  // group 1 varies, group 0 does not
  auto out = poisoned(r.size());
  group_normalize_rewards_host(r.data(), out.data(), T, G, R, nullptr);
  for (float v : group_of(out, T, G, R, 0)) EXPECT_EQ(v, 0.f);
  for (float v : group_of(out, T, G, R, 1)) EXPECT_TRUE(std::isfinite(v));
}

TEST(Returns, GroupShapesWithoutASampleStdAreRefused) {
  std::vector<float> r(8), out(8);
  EXPECT_THROW(group_normalize_rewards_host(r.data(), out.data(), 1, 4, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(group_normalize_rewards_host(r.data(), out.data(), 0, 4, 2, nullptr), std::invalid_argument);
  EXPECT_THROW(group_normalize_rewards_host(r.data(), out.data(), 2, 0, 2, nullptr), std::invalid_argument);
  EXPECT_THROW(group_normalize_rewards_host(r.data(), out.data(), 1 << 13, 1, 1 << 11, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
