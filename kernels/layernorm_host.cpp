// Host twins of layernorm.cu. Row statistics by Welford in double; parameter gradients summed
// in double, columns in parallel (independent of the thread count).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/gelu.h"
#include "kernels/layernorm.h"

namespace grpo {

void check_layernorm_shape(int M, int N, const char* op) {
  if (M < 0 || N < kLayerNormMinN || N > kLayerNormMaxN)
    throw std::invalid_argument(std::string(op) + ": need M >= 0 and " + std::to_string(kLayerNormMinN) +
                                " <= N <= " + std::to_string(kLayerNormMaxN) + ", got M = " + std::to_string(M) +
                                ", N = " + std::to_string(N));
}

void layernorm_residual_forward_host(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N) {
  check_layernorm_shape(M, N, "layernorm_residual_forward_host");
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    const float* x = h0 + size_t(r) * N;
    double mu = 0, m2 = 0;
    for (int c = 0; c < N; ++c) {
      const double g = gelu(x[c]), d = g - mu;
      mu += d / (c + 1);
      m2 += d * (g - mu);
    }
    const float m = float(mu), s = float(1.0 / std::sqrt(m2 / N + double(kLayerNormEps)));
    mean[r] = m;
    rstd[r] = s;
    for (int c = 0; c < N; ++c) h1[size_t(r) * N + c] = x[c] + (gelu(x[c]) - m) * s * gamma[c] + beta[c];
  }
}

void layernorm_residual_backward_host(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                      const float* rstd, float* dh0, float* dgamma, float* dbeta, int M, int N,
                                      float* /*scratch*/) {
  check_layernorm_shape(M, N, "layernorm_residual_backward_host");
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    const size_t o = size_t(r) * N;
    double s1 = 0, s2 = 0;  // sums of dxhat and dxhat * xhat
    for (int c = 0; c < N; ++c) {
      const double xhat = (double(gelu(h0[o + c])) - mean[r]) * rstd[r], dxhat = double(dh1[o + c]) * gamma[c];
      s1 += dxhat;
      s2 += dxhat * xhat;
    }
    const double a1 = s1 / N, a2 = s2 / N;
    for (int c = 0; c < N; ++c) {
      const double xhat = (double(gelu(h0[o + c])) - mean[r]) * rstd[r], dxhat = double(dh1[o + c]) * gamma[c];
      dh0[o + c] = float(dh1[o + c] + gelu_grad(h0[o + c]) * (rstd[r] * (dxhat - a1 - xhat * a2)));
    }
  }
  const int blocks = (N + 15) / 16;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < blocks; ++b) {
    double sg[16] = {}, sb[16] = {};
    const int c0 = 16 * b, c1 = std::min(N, c0 + 16);
    for (int r = 0; r < M; ++r)
      for (int c = c0; c < c1; ++c) {
        const size_t i = size_t(r) * N + c;
        sg[c - c0] += double(dh1[i]) * ((double(gelu(h0[i])) - mean[r]) * rstd[r]);
        sb[c - c0] += dh1[i];
      }
    for (int c = c0; c < c1; ++c) {
      dgamma[c] = float(sg[c - c0]);
      dbeta[c] = float(sb[c - c0]);
    }
  }
}

}  // namespace grpo
