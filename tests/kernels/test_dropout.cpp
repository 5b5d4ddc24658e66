// Dropout masks from Philox counters: the documented bit layout, keep rate, independence across
// purposes, epochs, steps, seeds, rows and neighbouring columns, and exact scaling.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dropout.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::poisoned;
using test::random_floats;

constexpr int kM = 301, kN = 667;  // 200,767 elements, neither a multiple of 4 nor of 32

std::vector<bool> mask(float p, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t step) {
  std::vector<bool> m(size_t(kM) * kN);
  for (int r = 0; r < kM; ++r)
    for (int c = 0; c < kN; ++c) m[size_t(r) * kN + c] = dropout_keep(p, seed, purpose, epoch, step, r, c);
  return m;
}

double agreement(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return double(same) / a.size();
}

TEST(Dropout, KeepFollowsTheDocumentedDraw) {
  for (uint32_t col : {0u, 1u, 2u, 3u, 4u, 13u, 666u}) {
    const Bits4 b = draw4(77, Purpose::DropoutLoss, 3, 9, 12, col / 4);
    const uint32_t words[4] = {b.x, b.y, b.z, b.w};
    EXPECT_EQ(dropout_keep(0.3f, 77, Purpose::DropoutLoss, 3, 9, 12, col), bits_to_uniform(words[col % 4]) >= 0.3f);
  }
}

// dropout_threshold's integer test against the documented float one, at probabilities whose
// p 2^24 is and is not a whole number (and the extremes of [0, 1)), for words at and around the
// threshold and random ones: a threshold one word too high or too low fails it.
TEST(Dropout, IntegerThresholdIsTheUniformTest) {
  std::mt19937 gen(20261127);
  std::uniform_real_distribution<float> any_p(0.f, 1.f);
  std::vector<float> ps = {0.f, 1e-30f, 0x1p-24f, 0x1.8p-24f, 0.1f, 0.3f, 0.5f, 0.9f, 1.f - 0x1p-24f};
  for (int i = 0; i < 200; ++i) ps.push_back(any_p(gen));
  for (float p : ps) {
    const uint32_t t = dropout_threshold(p);
    std::vector<uint32_t> words = {0u, 255u, 256u, 0xFFFFFFFFu, 0xFFFFFF00u};
    for (uint32_t d : {0u, 1u, 255u, 256u, 257u}) words.push_back(t - d), words.push_back(t + d);
    for (int i = 0; i < 64; ++i) words.push_back(uint32_t(gen()));
    for (uint32_t w : words) EXPECT_EQ(w >= t, bits_to_uniform(w) >= p) << "p " << p << " word " << w;
  }
}

TEST(Dropout, KeepRateIsOneMinusP) {
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const auto m = mask(p, 2024, Purpose::DropoutRollout, 17, 3);
    size_t kept = 0;
    for (bool k : m) kept += k;
    const double rate = double(kept) / m.size(), sigma = std::sqrt(p * (1 - p) / m.size());
    EXPECT_NEAR(rate, 1 - p, 5 * sigma) << "p " << p;
  }
}

// Independent masks agree on a fraction p^2 + (1-p)^2 of elements; identical ones on all.
TEST(Dropout, MasksDifferAcrossPurposesEpochsStepsAndSeeds) {
  const float p = 0.1f;
  const double expect = p * p + (1 - p) * (1 - p), sigma = std::sqrt(expect * (1 - expect) / (double(kM) * kN));
  const auto base = mask(p, 5, Purpose::DropoutRollout, 10, 4);
  EXPECT_EQ(agreement(base, mask(p, 5, Purpose::DropoutRollout, 10, 4)), 1.0);
  EXPECT_NEAR(agreement(base, mask(p, 5, Purpose::DropoutLoss, 10, 4)), expect, 5 * sigma);
  EXPECT_NEAR(agreement(base, mask(p, 5, Purpose::DropoutRollout, 11, 4)), expect, 5 * sigma);
  EXPECT_NEAR(agreement(base, mask(p, 5, Purpose::DropoutRollout, 10, 5)), expect, 5 * sigma);
  EXPECT_NEAR(agreement(base, mask(p, 6, Purpose::DropoutRollout, 10, 4)), expect, 5 * sigma);
  // Neighbouring columns (same Philox call) and neighbouring rows are independent too.
  size_t same_col = 0, n_col = 0, same_row = 0, n_row = 0;
  for (int r = 0; r < kM; ++r)
    for (int c = 0; c < kN; ++c) {
      const size_t i = size_t(r) * kN + c;
      if (c + 1 < kN) same_col += base[i] == base[i + 1], ++n_col;
      if (r + 1 < kM) same_row += base[i] == base[i + kN], ++n_row;
    }
  EXPECT_NEAR(double(same_col) / n_col, expect, 5 * sigma);
  EXPECT_NEAR(double(same_row) / n_row, expect, 5 * sigma);
}

TEST(Dropout, ApplyScalesKeptValuesExactlyAndZeroesTheRest) {
  const auto x = random_floats(size_t(kM) * kN, 3);
  const uint32_t epoch = 8;
  const DropoutSpec spec{0.25f, 11, Purpose::DropoutLoss, &epoch, 2};
  auto y = poisoned(x.size());
  dropout_apply_host(x.data(), y.data(), kM, kN, spec);
  for (int r = 0; r < kM; ++r)
    for (int c = 0; c < kN; ++c) {
      const size_t i = size_t(r) * kN + c;
      const float want = dropout_keep(0.25f, 11, Purpose::DropoutLoss, epoch, 2, r, c) ? x[i] * (1.f / 0.75f) : 0.f;
      ASSERT_EQ(std::memcmp(&y[i], &want, sizeof want), 0) << r << "," << c;
    }
  // p = 0: the identity, and no epoch pointer needed.
  auto z = poisoned(x.size());
  dropout_apply_host(x.data(), z.data(), kM, kN, DropoutSpec{0.f, 11, Purpose::DropoutLoss, nullptr, 2});
  EXPECT_EQ(std::memcmp(z.data(), x.data(), x.size() * sizeof(float)), 0);
}

TEST(Dropout, EpochIsReadThroughThePointerAtRunTime) {
  const auto x = random_floats(size_t(kM) * kN, 4);
  uint32_t epoch = 1;
  const DropoutSpec spec{0.5f, 1, Purpose::DropoutRollout, &epoch, 0};
  std::vector<float> a(x.size()), b(x.size());
  dropout_apply_host(x.data(), a.data(), kM, kN, spec);
  epoch = 2;  // same spec object, new epoch in memory: a fresh mask
  dropout_apply_host(x.data(), b.data(), kM, kN, spec);
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace grpo
