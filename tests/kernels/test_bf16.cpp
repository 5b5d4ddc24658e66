// kernels/bf16.h: the rounding against a reference written another way (compare the two
// neighbouring bf16 values in double), on special values, ties and random bit patterns.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Round to nearest, ties to even, from the two candidates: x's bits truncated to 16 (toward 0)
// and the next bf16 away from 0 (the largest finite one's successor is the infinity, worth
// 2^128 here, as IEEE's overflow rule has it).
uint16_t reference_bf16(float x) {
  const uint32_t u = bits_of(x);
  if (std::isnan(x)) return 0;  // checked separately
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  if (lo == u) return uint16_t(lo >> 16);
  const double mag = std::fabs(double(x)), lo_mag = std::fabs(double(from_bits(lo)));
  const double hi_mag = (hi & 0x7fffffffu) == 0x7f800000u ? std::ldexp(1.0, 128) : std::fabs(double(from_bits(hi)));
  const double below = mag - lo_mag, above = hi_mag - mag;
  if (below < above) return uint16_t(lo >> 16);
  if (above < below) return uint16_t(hi >> 16);
  return (lo >> 16) & 1u ? uint16_t(hi >> 16) : uint16_t(lo >> 16);
}

TEST(Bf16, SpecialValuesAndTies) {
  EXPECT_EQ(to_bf16(0.f).bits, 0x0000);
  EXPECT_EQ(to_bf16(-0.f).bits, 0x8000);
  EXPECT_EQ(to_bf16(1.f).bits, 0x3f80);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(to_bf16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds past the largest bf16
  EXPECT_EQ(to_bf16(from_bits(0x7f7f7fffu)).bits, 0x7f7f);             // just below the halfway point
  EXPECT_EQ(to_bf16(from_bits(0x3f808000u)).bits, 0x3f80);             // a tie, to the even 0x3f80
  EXPECT_EQ(to_bf16(from_bits(0x3f818000u)).bits, 0x3f82);             // a tie, to the even 0x3f82
  EXPECT_EQ(to_bf16(from_bits(0x3f808001u)).bits, 0x3f81);             // just past a tie
  EXPECT_EQ(to_bf16(from_bits(0x00000001u)).bits, 0x0000);             // the smallest subnormal
  EXPECT_EQ(to_bf16(from_bits(0x00018000u)).bits, 0x0002);             // a subnormal tie, to even
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu}) {
    const Bf16 b = to_bf16(from_bits(nan));
    EXPECT_TRUE(std::isnan(to_float(b))) << std::hex << nan;
    EXPECT_EQ(b.bits & 0x0040u, 0x0040u) << std::hex << nan;  // quiet
    EXPECT_EQ(b.bits & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << nan;
  }
}

TEST(Bf16, MatchesTheReferenceOnRandomBitPatterns) {
  std::mt19937 gen(20261124);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = gen();
    const float x = from_bits(u);
    if (std::isnan(x)) continue;
    ASSERT_EQ(to_bf16(x).bits, reference_bf16(x)) << std::hex << u;
  }
}

TEST(Bf16, WidensExactlyAndCastsArrays) {
  const auto x = test::random_floats(1001, 7, -1e4f, 1e4f);
  std::vector<Bf16> b(x.size(), Bf16{0xdead});
  to_bf16_host(x.data(), b.data(), x.size());
  std::vector<float> back(x.size(), test::poison_value());
  to_float_host(b.data(), back.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(b[i].bits, reference_bf16(x[i])) << i;
    ASSERT_EQ(bits_of(back[i]), uint32_t(b[i].bits) << 16) << i;
    ASSERT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << i;  // half an ulp of 8 bits
  }
}

// The bf16 host twins are the fp32 twins on the widened operands: a change to either path shows.
TEST(Bf16, ProductTwinsSumTheWidenedOperands) {
  const int M = 9, N = 7, K = 13;
  const auto xf = test::random_floats(size_t(M) * K, 1), wf = test::random_floats(size_t(N) * K, 2);
  const auto dyf = test::random_floats(size_t(M) * N, 3), bias = test::random_floats(N, 4);
  std::vector<Bf16> x(xf.size()), w(wf.size()), dy(dyf.size());
  to_bf16_host(xf.data(), x.data(), x.size());
  to_bf16_host(wf.data(), w.data(), w.size());
  to_bf16_host(dyf.data(), dy.data(), dy.size());
  auto widened = [](const std::vector<Bf16>& b) {
    std::vector<float> f(b.size());
    for (size_t i = 0; i < b.size(); ++i) f[i] = to_float(b[i]);
    return f;
  };
  const auto xw = widened(x), ww = widened(w), dyw = widened(dy);
  // Each output element by hand, in double: the twins must agree within fp32 summation error.
  std::vector<float> y(size_t(M) * N, test::poison_value());
  linear_forward_bf16_host(x.data(), w.data(), bias.data(), y.data(), M, N, K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = bias[j];
      for (int k = 0; k < K; ++k) s += double(xw[i * K + k]) * ww[j * K + k];
      EXPECT_NEAR(y[i * N + j], s, 1e-5) << i << "," << j;
    }
  std::vector<float> dx(size_t(M) * K, test::poison_value());
  linear_backward_input_bf16_host(dy.data(), w.data(), dx.data(), M, N, K);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      double s = 0;
      for (int j = 0; j < N; ++j) s += double(dyw[i * N + j]) * ww[j * K + k];
      EXPECT_NEAR(dx[i * K + k], s, 1e-5) << i << "," << k;
    }
  const auto old = test::random_floats(size_t(N) * K, 5);
  for (bool accumulate : {false, true}) {
    std::vector<float> dw = accumulate ? old : test::poisoned(old.size());
    linear_backward_weight_bf16_host(dy.data(), x.data(), dw.data(), M, N, K, accumulate);
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) {
        double s = accumulate ? old[j * K + k] : 0.0;
        for (int i = 0; i < M; ++i) s += double(dyw[i * N + j]) * xw[i * K + k];
        EXPECT_NEAR(dw[j * K + k], s, 1e-5) << j << "," << k << " acc " << accumulate;
      }
  }
}

}  // namespace
}  // namespace grpo
