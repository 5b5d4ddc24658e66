// Host twins of matmul.h against double-precision naive products, plus central finite
// differences of a scalar loss for the backward products.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct Shape {
  int M, N, K;
};
// {9001, 40, 37}: dW = dY^T X sums over 9001 >= 8192 rows into one small tile, the path that
// splits the sum into fixed slices (kernels/matmul_host.cpp). N < 16 or K < 16 take the AVX-512
// paths where the CPU has them (cpu/matmul_avx512.cpp): {136, 512, 10} is fc_in at the
// small preset, {3, 3, 512} the policy head, {1100, 37, 10} has a 16-column tail and three
// 512-row slices of dW's sum.
const Shape kShapes[] = {{37, 23, 19},   {5, 3, 70},     {64, 128, 33}, {1, 1, 1},      {130, 7, 9},
                         {9001, 40, 37}, {136, 512, 10}, {3, 3, 512},   {1100, 37, 10}, {20, 17, 15}};

// Y = X W^T (+ b) in double.
std::vector<double> naive_forward(const std::vector<float>& X, const std::vector<float>& W, const float* b, int M,
                                  int N, int K) {
  std::vector<double> Y(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = b ? b[n] : 0.0;
      for (int k = 0; k < K; ++k) s += double(X[size_t(m) * K + k]) * W[size_t(n) * K + k];
      Y[size_t(m) * N + n] = s;
    }
  return Y;
}

TEST(MatmulHost, ForwardMatchesNaiveWithAndWithoutBias) {
  uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    const auto b = random_floats(s.N, ++seed);
    for (const float* bias : {static_cast<const float*>(nullptr), b.data()}) {
      auto Y = poisoned(size_t(s.M) * s.N);
      linear_forward_host(X.data(), W.data(), bias, Y.data(), s.M, s.N, s.K);
      EXPECT_LE(rel_l2(Y, naive_forward(X, W, bias, s.M, s.N, s.K)), 1e-5)
          << s.M << "x" << s.N << "x" << s.K << (bias ? " with bias" : "");
    }
  }
}

TEST(MatmulHost, BackwardInputMatchesNaive) {
  uint64_t seed = 200;
  for (const Shape& s : kShapes) {
    const auto dY = random_floats(size_t(s.M) * s.N, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    auto dX = poisoned(size_t(s.M) * s.K);
    linear_backward_input_host(dY.data(), W.data(), dX.data(), s.M, s.N, s.K);
    std::vector<double> ref(size_t(s.M) * s.K);
    for (int m = 0; m < s.M; ++m)
      for (int k = 0; k < s.K; ++k) {
        double t = 0;
        for (int n = 0; n < s.N; ++n) t += double(dY[size_t(m) * s.N + n]) * W[size_t(n) * s.K + k];
        ref[size_t(m) * s.K + k] = t;
      }
    EXPECT_LE(rel_l2(dX, ref), 1e-5) << s.M << "x" << s.N << "x" << s.K;
  }
}

TEST(MatmulHost, BackwardWeightOverwritesOrAccumulates) {
  uint64_t seed = 300;
  for (const Shape& s : kShapes) {
    const auto dY = random_floats(size_t(s.M) * s.N, ++seed), X = random_floats(size_t(s.M) * s.K, ++seed);
    const auto old = random_floats(size_t(s.N) * s.K, ++seed);
    std::vector<double> prod(size_t(s.N) * s.K);
    for (int n = 0; n < s.N; ++n)
      for (int k = 0; k < s.K; ++k) {
        double t = 0;
        for (int m = 0; m < s.M; ++m) t += double(dY[size_t(m) * s.N + n]) * X[size_t(m) * s.K + k];
        prod[size_t(n) * s.K + k] = t;
      }
    auto dW = poisoned(size_t(s.N) * s.K);
    linear_backward_weight_host(dY.data(), X.data(), dW.data(), s.M, s.N, s.K, false);
    EXPECT_LE(rel_l2(dW, prod), 1e-5);
    auto acc = old;
    linear_backward_weight_host(dY.data(), X.data(), acc.data(), s.M, s.N, s.K, true);
    std::vector<double> ref(prod.size());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = prod[i] + old[i];
    EXPECT_LE(rel_l2(acc, ref), 1e-5);
  }
}

// L = sum(G * (X W^T + b)): dL/dX = G W, dL/dW = G^T X, dL/db = column sums of G. Central
// differences of L (evaluated in double from the float forward) check all three.
TEST(MatmulHost, GradientsMatchCentralDifferences) {
  const int M = 6, N = 5, K = 7;
  auto X = random_floats(size_t(M) * K, 1), W = random_floats(size_t(N) * K, 2), b = random_floats(N, 3);
  const auto G = random_floats(size_t(M) * N, 4);
  auto loss = [&] {
    std::vector<float> Y(size_t(M) * N);
    linear_forward_host(X.data(), W.data(), b.data(), Y.data(), M, N, K);
    double L = 0;
    for (size_t i = 0; i < Y.size(); ++i) L += double(G[i]) * Y[i];
    return L;
  };
  std::vector<float> dX(size_t(M) * K), dW(size_t(N) * K), db(N);
  std::vector<float> scratch(bias_grad_scratch_floats(M, N));
  linear_backward_input_host(G.data(), W.data(), dX.data(), M, N, K);
  linear_backward_weight_host(G.data(), X.data(), dW.data(), M, N, K, false);
  bias_grad_host(G.data(), db.data(), M, N, scratch.data());
  const float h = 1e-2f;
  auto fd = [&](std::vector<float>& v, size_t i) {
    const float keep = v[i];
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < dX.size(); ++i) EXPECT_NEAR(dX[i], fd(X, i), 1e-3) << "dX " << i;
  for (size_t i = 0; i < dW.size(); ++i) EXPECT_NEAR(dW[i], fd(W, i), 1e-3) << "dW " << i;
  for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db[i], fd(b, i), 1e-3) << "db " << i;
}

TEST(MatmulHost, BiasGradIsColumnSum) {
  uint64_t seed = 400;
  for (auto [M, N] : {std::pair{37, 23}, {1000, 3}, {3, 130}}) {
    const auto dY = random_floats(size_t(M) * N, ++seed);
    auto db = poisoned(N);
    std::vector<float> scratch(bias_grad_scratch_floats(M, N));
    bias_grad_host(dY.data(), db.data(), M, N, scratch.data());
    std::vector<double> ref(N, 0.0);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) ref[n] += dY[size_t(m) * N + n];
    EXPECT_LE(rel_l2(db, ref), 1e-5) << M << "x" << N;
  }
}

TEST(MatmulHost, RejectsBadShapes) {
  std::vector<float> a(4), b(4), c(4);
  EXPECT_THROW(linear_forward_host(a.data(), b.data(), nullptr, c.data(), -1, 2, 2), std::invalid_argument);
  EXPECT_THROW(linear_forward_host(a.data(), b.data(), nullptr, c.data(), 2, 0, 2), std::invalid_argument);
  EXPECT_THROW(linear_backward_input_host(a.data(), b.data(), c.data(), 2, 2, 0), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
