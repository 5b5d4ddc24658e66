// Host twins of layernorm.h against a double-precision naive forward (two-pass mean and
// variance) and central finite differences of that naive forward for the backward.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

double gelu_d(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

// h1 = h0 + LN(gelu(h0)) in double, two-pass statistics.
std::vector<double> naive_forward(const std::vector<double>& h0, const std::vector<double>& gamma,
                                  const std::vector<double>& beta, int M, int N, std::vector<double>* mean = nullptr,
                                  std::vector<double>* rstd = nullptr) {
  std::vector<double> h1(h0.size());
  for (int r = 0; r < M; ++r) {
    const double* x = &h0[size_t(r) * N];
    double mu = 0, var = 0;
    for (int c = 0; c < N; ++c) mu += gelu_d(x[c]);
    mu /= N;
    for (int c = 0; c < N; ++c) var += (gelu_d(x[c]) - mu) * (gelu_d(x[c]) - mu);
    const double rs = 1 / std::sqrt(var / N + 1e-5);
    if (mean) mean->push_back(mu);
    if (rstd) rstd->push_back(rs);
    for (int c = 0; c < N; ++c) h1[size_t(r) * N + c] = x[c] + (gelu_d(x[c]) - mu) * rs * gamma[c] + beta[c];
  }
  return h1;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

TEST(LayerNormHost, ForwardMatchesNaive) {
  uint64_t seed = 50;
  for (auto [M, N] : {std::pair{7, 8}, {5, 13}, {33, 100}, {3, 1030}, {2, 8192}}) {
    // An offset on h0 makes the mean large next to the spread: the case Welford is for.
    const auto h0 = random_floats(size_t(M) * N, ++seed, 1.5f, 4.f);
    const auto gamma = random_floats(N, ++seed, 0.5f, 1.5f), beta = random_floats(N, ++seed);
    auto h1 = poisoned(h0.size()), mean = poisoned(M), rstd = poisoned(M);
    layernorm_residual_forward_host(h0.data(), gamma.data(), beta.data(), h1.data(), mean.data(), rstd.data(), M, N);
    std::vector<double> rm, rr;
    const auto ref = naive_forward(to_double(h0), to_double(gamma), to_double(beta), M, N, &rm, &rr);
    EXPECT_TRUE(all_close(h1, to_float(ref))) << M << "x" << N;
    EXPECT_TRUE(all_close(mean, to_float(rm))) << M << "x" << N;
    EXPECT_TRUE(all_close(rstd, to_float(rr))) << M << "x" << N;
  }
}

// L = sum(G * h1(h0, gamma, beta)); the host twin's gradients against central differences of
// the double-precision naive forward.
TEST(LayerNormHost, BackwardMatchesCentralDifferences) {
  uint64_t seed = 60;
  for (auto [M, N] : {std::pair{4, 8}, {3, 13}, {5, 37}}) {
    const auto h0 = random_floats(size_t(M) * N, ++seed, -2.f, 2.f);
    const auto gamma = random_floats(N, ++seed, 0.5f, 1.5f), beta = random_floats(N, ++seed);
    const auto G = random_floats(h0.size(), ++seed);
    std::vector<float> h1(h0.size()), mean(M), rstd(M);
    layernorm_residual_forward_host(h0.data(), gamma.data(), beta.data(), h1.data(), mean.data(), rstd.data(), M, N);
    auto dh0 = poisoned(h0.size()), dgamma = poisoned(N), dbeta = poisoned(N);
    std::vector<float> scratch(layernorm_residual_backward_scratch_floats(M, N));
    layernorm_residual_backward_host(G.data(), h0.data(), gamma.data(), mean.data(), rstd.data(), dh0.data(),
                                     dgamma.data(), dbeta.data(), M, N, scratch.data());
    auto x = to_double(h0), g = to_double(gamma), b = to_double(beta);
    auto loss = [&] {
      const auto y = naive_forward(x, g, b, M, N);
      double L = 0;
      for (size_t i = 0; i < y.size(); ++i) L += G[i] * y[i];
      return L;
    };
    auto fd = [&](std::vector<double>& v, size_t i) {
      const double keep = v[i], h = 1e-5;
      v[i] = keep + h;
      const double up = loss();
      v[i] = keep - h;
      const double down = loss();
      v[i] = keep;
      return (up - down) / (2 * h);
    };
    std::vector<double> rx(x.size()), rg(N), rb(N);
    for (size_t i = 0; i < x.size(); ++i) rx[i] = fd(x, i);
    for (int c = 0; c < N; ++c) rg[c] = fd(g, c), rb[c] = fd(b, c);
    EXPECT_LE(rel_l2(dh0, rx), 1e-5) << M << "x" << N;
    EXPECT_LE(rel_l2(dgamma, rg), 1e-5) << M << "x" << N;
    EXPECT_LE(rel_l2(dbeta, rb), 1e-5) << M << "x" << N;
    EXPECT_TRUE(all_close(dh0, to_float(rx), 1e-4, 1e-3)) << M << "x" << N;
  }
}

// The fused backward with fc_in's weight gradient (HostOps' layernorm_input_backward) against the
// two twins it replaces: one row, widths off the vector width, several row chunks, the small
// preset's width and input size.
TEST(LayerNormHost, InputBackwardMatchesTheTwoTwinsItFuses) {
  struct Shape {
    int M, N, D;
  };
  uint64_t seed = 700;
  for (const Shape s : {Shape{1, 8, 1}, Shape{37, 24, 10}, Shape{300, 67, 3}, Shape{2000, 512, 10}}) {
    SCOPED_TRACE(::testing::Message() << "M " << s.M << " N " << s.N << " D " << s.D);
    const size_t MN = size_t(s.M) * s.N;
    const auto h0 = random_floats(MN, ++seed, -2.f, 2.f), dh1 = random_floats(MN, ++seed),
               X = random_floats(size_t(s.M) * s.D, ++seed), gamma = random_floats(s.N, ++seed, 0.5f, 1.5f),
               beta = random_floats(s.N, ++seed);
    std::vector<float> h1(MN), mean(s.M), rstd(s.M);
    layernorm_residual_forward_host(h0.data(), gamma.data(), beta.data(), h1.data(), mean.data(), rstd.data(), s.M,
                                    s.N);
    auto dh0 = poisoned(MN), dg = poisoned(s.N), db = poisoned(s.N), dw = poisoned(size_t(s.N) * s.D);
    layernorm_residual_backward_host(dh1.data(), h0.data(), gamma.data(), mean.data(), rstd.data(), dh0.data(),
                                     dg.data(), db.data(), s.M, s.N, nullptr);
    linear_backward_weight_host(dh0.data(), X.data(), dw.data(), s.M, s.N, s.D, false);
    auto fg = poisoned(s.N), fb = poisoned(s.N), fw = poisoned(size_t(s.N) * s.D);
    std::vector<float> partial(layernorm_input_backward_partial_floats(s.M, s.N, s.D), test::poison_value());
    layernorm_input_backward_host(dh1.data(), h0.data(), X.data(), gamma.data(), mean.data(), rstd.data(), fg.data(),
                                  fb.data(), fw.data(), s.M, s.N, s.D, partial.data());
    EXPECT_EQ(fg, dg) << "dgamma: the same chunks added in the same order";
    EXPECT_EQ(fb, db) << "dbeta";
    EXPECT_LE(rel_l2(fw, dw), 1e-5) << "fc_in weight gradient";
  }
}

TEST(LayerNormHost, RejectsWidthsOutsideTheRange) {
  std::vector<float> v(8 * 8200);
  for (int N : {7, 8193}) {
    EXPECT_THROW(layernorm_residual_forward_host(v.data(), v.data(), v.data(), v.data(), v.data(), v.data(), 1, N),
                 std::invalid_argument)
        << N;
  }
}

}  // namespace
}  // namespace grpo
