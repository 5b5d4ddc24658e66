// Host twins of matmul.cu: OpenBLAS sgemm in row-major mode, so the calls read like the maths.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <cblas.h>

#include "kernels/matmul.h"

namespace grpo {

void check_linear_shape(int M, int N, int K, const char* op) {
  if (M < 0 || N < 1 || K < 1)
    throw std::invalid_argument(std::string(op) + ": need M >= 0, N >= 1, K >= 1, got M = " + std::to_string(M) +
                                ", N = " + std::to_string(N) + ", K = " + std::to_string(K));
}

void linear_forward_host(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_forward_host");
  if (M == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, X, K, W, K, 0.f, Y, N);
  if (bias == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) Y[size_t(r) * N + c] += bias[c];
}

void linear_backward_input_host(const float* dY, const float* W, float* dX, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_backward_input_host");
  if (M == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.f, dY, N, W, K, 0.f, dX, K);
}

void linear_backward_weight_host(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate) {
  check_linear_shape(M, N, K, "linear_backward_weight_host");
  if (M == 0) {  // an empty sum: dW = 0, or unchanged when accumulating
    if (!accumulate) std::fill(dW, dW + size_t(N) * K, 0.f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.f, dY, N, X, K, accumulate ? 1.f : 0.f, dW, K);
}

void bias_grad_host(const float* dY, float* db, int M, int N, float* /*scratch*/) {
  if (M < 0 || N < 0) throw std::invalid_argument("bias_grad_host: negative shape");
  const int blocks = (N + 15) / 16;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < blocks; ++b) {
    double s[16] = {};
    const int c0 = 16 * b, c1 = std::min(N, c0 + 16);
    for (int r = 0; r < M; ++r)
      for (int c = c0; c < c1; ++c) s[c - c0] += dY[size_t(r) * N + c];
    for (int c = c0; c < c1; ++c) db[c] = float(s[c - c0]);
  }
}

}  // namespace grpo
