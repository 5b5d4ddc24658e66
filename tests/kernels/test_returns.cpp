// Host twins of returns and advantages vs first principles in double.
#include <algorithm>
#include <cmath>
#include <stdexcept>
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

}  // namespace
}  // namespace grpo
