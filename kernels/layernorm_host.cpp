// Host twins of layernorm.cu, written for speed (the host executor trains on them): rows in
// parallel, GELU once per element per pass through the vectorised gelu_fast_host.h, row
// statistics by two passes in double (as exact as Welford, without its serial divisions).
// dgamma/dbeta use the kernels' two-stage layout (activations_colsum.h): float partial sums per
// fixed row chunk in the caller's scratch, chunks added in order in double, so the result does
// not depend on the thread count. scratch == nullptr (tests) allocates instead.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gelu_fast_host.h"
#include "kernels/parallel_fast_host.h"
#include "kernels/layernorm.h"

namespace grpo {

void check_layernorm_shape(int M, int N, const char* op) {
  if (M < 0 || N < kLayerNormMinN || N > kLayerNormMaxN)
    throw std::invalid_argument(std::string(op) + ": need M >= 0 and " + std::to_string(kLayerNormMinN) +
                                " <= N <= " + std::to_string(kLayerNormMaxN) + ", got M = " + std::to_string(M) +
                                ", N = " + std::to_string(N));
}

namespace {

// The row loops are compiled twice, for AVX2 and for the SSE2 baseline, and picked at load time
// (GCC target_clones): the statistics are sums in double, which SSE2 does two lanes at a time.
// No FMA in either clone. The AVX2 clone sums in a different lane order, so a machine without
// AVX2 may differ in the last bits; on one machine the result never depends on the thread count.
#if defined(__x86_64__) && defined(__linux__)
#define GRPO_LN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GRPO_LN_CLONES
#endif

GRPO_LN_CLONES void forward_rows(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                 float* rstd, int r0, int r1, int N) {
  for (int r = r0; r < r1; ++r) {
    const float* x = h0 + size_t(r) * N;
    float* y = h1 + size_t(r) * N;
    hostmath::gelu_n(x, y, N);  // y holds gelu(x) until the last pass overwrites it
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int c = 0; c < N; ++c) s += y[c];
    const double mu = s / N;
    double q = 0;
#pragma omp simd reduction(+ : q)
    for (int c = 0; c < N; ++c) q += (y[c] - mu) * (y[c] - mu);
    const float m = float(mu), rs = float(1.0 / std::sqrt(q / N + double(kLayerNormEps)));
    mean[r] = m;
    rstd[r] = rs;
#pragma omp simd
    for (int c = 0; c < N; ++c) y[c] = x[c] + (y[c] - m) * rs * gamma[c] + beta[c];
  }
}

// Rows [r0, r1) of the backward, their dgamma/dbeta added into pg/pb.
GRPO_LN_CLONES void backward_rows(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                  const float* rstd, float* dh0, float* pg, float* pb, int r0, int r1, int N) {
  float xhat[kLayerNormMaxN], dg[kLayerNormMaxN];
  for (int r = r0; r < r1; ++r) {
    const size_t o = size_t(r) * N;
    const float* d = dh1 + o;
    hostmath::gelu_and_grad_n(h0 + o, xhat, dg, N);
    const float m = mean[r], rs = rstd[r];
    double s1 = 0, s2 = 0;  // sums of dxhat and dxhat * xhat
#pragma omp simd reduction(+ : s1, s2)
    for (int c = 0; c < N; ++c) {
      const float xh = (xhat[c] - m) * rs, dxh = d[c] * gamma[c];
      xhat[c] = xh;
      s1 += dxh;
      s2 += double(dxh) * xh;
      pg[c] += d[c] * xh;
      pb[c] += d[c];
    }
    const float a1 = float(s1 / N), a2 = float(s2 / N);
#pragma omp simd
    for (int c = 0; c < N; ++c) dh0[o + c] = d[c] + dg[c] * (rs * (d[c] * gamma[c] - a1 - xhat[c] * a2));
  }
}

}  // namespace

void layernorm_residual_forward_host(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N) {
  check_layernorm_shape(M, N, "layernorm_residual_forward_host");
  hostpar::for_row_ranges(M, N, hostmath::kParallelElements,
                          [&](int r0, int r1) { forward_rows(h0, gamma, beta, h1, mean, rstd, r0, r1, N); });
}

void layernorm_residual_backward_host(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                      const float* rstd, float* dh0, float* dgamma, float* dbeta, int M, int N,
                                      float* scratch) {
  check_layernorm_shape(M, N, "layernorm_residual_backward_host");
  const unsigned rows = colsum::rows_per_chunk(size_t(M)), chunks = colsum::chunks(size_t(M));
  std::vector<float> own;
  if (scratch == nullptr) {
    own.resize(2 * size_t(chunks) * N);
    scratch = own.data();
  }
  auto chunk = [&](int ch) {
    float* pg = scratch + size_t(ch) * N;             // partial dgamma of this chunk
    float* pb = scratch + size_t(chunks + ch) * N;    // partial dbeta
    std::fill(pg, pg + N, 0.f);
    std::fill(pb, pb + N, 0.f);
    backward_rows(dh1, h0, gamma, mean, rstd, dh0, pg, pb, int(ch * rows), std::min<int>(M, int((ch + 1) * rows)), N);
  };
  if (double(M) * N >= hostmath::kParallelElements) hostpar::parallel_for(int(chunks), chunk);
  else for (unsigned ch = 0; ch < chunks; ++ch) chunk(int(ch));
  for (int c = 0; c < N; ++c) {
    double sg = 0, sb = 0;
    for (unsigned ch = 0; ch < chunks; ++ch) {
      sg += scratch[size_t(ch) * N + c];
      sb += scratch[size_t(chunks + ch) * N + c];
    }
    dgamma[c] = float(sg);
    dbeta[c] = float(sb);
  }
}

}  // namespace grpo
