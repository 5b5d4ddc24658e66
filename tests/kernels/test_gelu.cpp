// Host twins of gelu.h against double-precision formulas and central finite differences.
#include <cmath>
#include <vector>

#include "kernels/gelu.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

double gelu_d(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

TEST(GeluHost, ValueAndDerivativeMatchDouble) {
  const auto x = random_floats(2001, 7, -6.f, 6.f);
  for (float v : x) {
    EXPECT_NEAR(gelu(v), gelu_d(v), 1e-5 + 1e-5 * std::fabs(gelu_d(v))) << v;
    const double h = 1e-5, fd = (gelu_d(v + h) - gelu_d(v - h)) / (2 * h);
    EXPECT_NEAR(gelu_grad(v), fd, 1e-5 + 1e-4 * std::fabs(fd)) << v;
    float g;
    EXPECT_EQ(gelu_and_grad(v, g), gelu(v));
    EXPECT_EQ(g, gelu_grad(v));
  }
}

struct Case {
  int M, N;
  float p;
};
const Case kCases[] = {{37, 23, 0.f}, {37, 23, 0.1f}, {9, 64, 0.5f}, {4, 130, 0.1f}, {1, 3, 0.f}};

// out = keep ? gelu(a + b) / (1 - p) : 0, in double, with the mask from dropout_keep.
TEST(GeluHost, ForwardMatchesNaive) {
  uint64_t seed = 10;
  for (const Case& c : kCases) {
    const auto a = random_floats(size_t(c.M) * c.N, ++seed, -3.f, 3.f), b = random_floats(c.N, ++seed);
    const uint32_t epoch = 41;
    const DropoutSpec spec{c.p, 1234, Purpose::DropoutRollout, &epoch, 7};
    auto out = poisoned(a.size());
    bias_gelu_dropout_forward_host(a.data(), b.data(), out.data(), c.M, c.N, spec);
    std::vector<float> ref(a.size());
    size_t dropped = 0;
    for (int r = 0; r < c.M; ++r)
      for (int n = 0; n < c.N; ++n) {
        const bool keep = dropout_keep(c.p, 1234, Purpose::DropoutRollout, epoch, 7, r, n);
        dropped += !keep;
        ref[size_t(r) * c.N + n] = keep ? float(gelu_d(double(a[size_t(r) * c.N + n]) + b[n]) / (1.0 - c.p)) : 0.f;
      }
    EXPECT_TRUE(all_close(out, ref)) << c.M << "x" << c.N << " p " << c.p;
    if (c.p == 0.f) {
      EXPECT_EQ(dropped, 0u);
    } else if (c.M * c.N > 500) {
      EXPECT_GT(dropped, 0u);
    }
  }
}

// L = sum(dout * out(a, b)): da and dbias against central differences of the host forward.
TEST(GeluHost, BackwardMatchesCentralDifferences) {
  uint64_t seed = 20;
  for (const Case& c : kCases) {
    const auto a = random_floats(size_t(c.M) * c.N, ++seed, -3.f, 3.f);
    const auto b = random_floats(c.N, ++seed);
    const auto dout = random_floats(a.size(), ++seed);
    const uint32_t epoch = 5;
    const DropoutSpec spec{c.p, 99, Purpose::DropoutLoss, &epoch, 0};
    auto da = poisoned(a.size()), db = poisoned(c.N);
    std::vector<float> scratch(bias_gelu_dropout_backward_scratch_floats(c.M, c.N));
    bias_gelu_dropout_backward_host(dout.data(), a.data(), b.data(), da.data(), db.data(), c.M, c.N, spec,
                                    scratch.data());
    // out[i] depends on a[i] alone, so shifting every element at once gives all differences
    // from two forward calls.
    const float h = 1e-2f;
    std::vector<float> a_up(a), a_down(a), up(a.size()), down(a.size());
    for (size_t i = 0; i < a.size(); ++i) a_up[i] += h, a_down[i] -= h;
    bias_gelu_dropout_forward_host(a_up.data(), b.data(), up.data(), c.M, c.N, spec);
    bias_gelu_dropout_forward_host(a_down.data(), b.data(), down.data(), c.M, c.N, spec);
    for (size_t i = 0; i < a.size(); ++i) {
      const double fd = double(dout[i]) * (double(up[i]) - down[i]) / (double(a_up[i]) - a_down[i]);
      EXPECT_NEAR(da[i], fd, 2e-3 + 2e-3 * std::fabs(fd)) << "da " << i;
    }
    // Column n depends on bias[n] alone: shift every bias at once and difference column sums.
    std::vector<float> b_up(b), b_down(b);
    for (int n = 0; n < c.N; ++n) b_up[n] += h, b_down[n] -= h;
    bias_gelu_dropout_forward_host(a.data(), b_up.data(), up.data(), c.M, c.N, spec);
    bias_gelu_dropout_forward_host(a.data(), b_down.data(), down.data(), c.M, c.N, spec);
    for (int n = 0; n < c.N; ++n) {
      double diff = 0;
      for (int r = 0; r < c.M; ++r) {
        const size_t i = size_t(r) * c.N + n;
        diff += double(dout[i]) * (double(up[i]) - down[i]);
      }
      const double fd = diff / (double(b_up[n]) - b_down[n]);
      EXPECT_NEAR(db[n], fd, 2e-3 + 2e-3 * std::fabs(fd)) << "dbias " << n;
    }
    // dbias is exactly the column sum of da (in double).
    std::vector<double> sums(c.N, 0.0);
    for (int r = 0; r < c.M; ++r)
      for (int n = 0; n < c.N; ++n) sums[n] += da[size_t(r) * c.N + n];
    EXPECT_LE(rel_l2(db, sums), 1e-6);
  }
}

TEST(GeluHost, RejectsBadDropout) {
  std::vector<float> a(8), b(4), out(8);
  const uint32_t epoch = 0;
  EXPECT_THROW(
      bias_gelu_dropout_forward_host(a.data(), b.data(), out.data(), 2, 4, {1.f, 1, Purpose::DropoutLoss, &epoch, 0}),
      std::invalid_argument);
  EXPECT_THROW(
      bias_gelu_dropout_forward_host(a.data(), b.data(), out.data(), 2, 4, {0.1f, 1, Purpose::DropoutLoss, nullptr, 0}),
      std::invalid_argument);
}

}  // namespace
}  // namespace grpo
