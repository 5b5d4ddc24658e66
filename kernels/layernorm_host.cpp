// Host twins of layernorm.cu, written for speed (the host executor trains on them): rows in
// parallel, GELU once per element per pass through the vectorised kernels/gelu_vec_host.h, row
// statistics by two passes in double (as exact as Welford, without its serial divisions).
// dgamma/dbeta use the kernels' two-stage layout (activations_colsum.h): float partial sums per
// fixed row chunk in the caller's scratch, chunks added in order in double, so the result does
// not depend on the thread count. scratch == nullptr (tests) allocates instead.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gelu_vec_host.h"
#include "cpu/parallel.h"
#include "kernels/layernorm.h"
#include "cpu/matmul_avx512.h"

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

// Rows [r0, r1) of the backward, their dgamma/dbeta added into pg/pb, dh0 row r written to
// dh0 + (r - r0) * ld0 (ld0 = N: the rows of dh0 itself; 0 into its row block, see below).
GRPO_LN_CLONES void backward_rows(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                  const float* rstd, float* dh0, size_t ld0, float* pg, float* pb, int r0, int r1,
                                  int N) {
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
    float* out = dh0 + size_t(r - r0) * ld0;
#pragma omp simd
    for (int c = 0; c < N; ++c) out[c] = d[c] + dg[c] * (rs * (d[c] * gamma[c] - a1 - xhat[c] * a2));
  }
}

// pw[D, N] += dh0[rows, N]^T x[rows, D] without AVX-512 (the AVX-512 path is in cpu/matmul_avx512.cpp).
GRPO_LN_CLONES void add_outer_rows(const float* dh0, const float* x, float* pw, int rows, int N, int D) {
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < D; ++k) {
      float* w = pw + size_t(k) * N;
      const float xk = x[size_t(r) * D + k];
#pragma omp simd
      for (int c = 0; c < N; ++c) w[c] += xk * dh0[size_t(r) * N + c];
    }
}

// Stage two of the column sums: out[i] = sum over chunks of part[ch * stride + i] in chunk order,
// in double, for i < cols; the columns split over the pool in fixed blocks.
void finish_columns(const float* part, unsigned chunks, size_t stride, int cols, float* out) {
  const int block = 256;
  auto run = [&](int b) {
    for (int i = b * block; i < std::min(cols, (b + 1) * block); ++i) {
      double acc = 0;
      for (unsigned ch = 0; ch < chunks; ++ch) acc += part[ch * stride + size_t(i)];
      out[i] = float(acc);
    }
  };
  const int blocks = (cols + block - 1) / block;
  if (double(cols) * chunks >= hostmath::kParallelElements)
    hostpar::parallel_for(blocks, run);
  else
    for (int b = 0; b < blocks; ++b) run(b);
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
    float* pg = scratch + size_t(ch) * N;           // partial dgamma of this chunk
    float* pb = scratch + size_t(chunks + ch) * N;  // partial dbeta
    std::fill(pg, pg + N, 0.f);
    std::fill(pb, pb + N, 0.f);
    const int r0 = int(ch * rows), r1 = std::min<int>(M, int((ch + 1) * rows));
    backward_rows(dh1, h0, gamma, mean, rstd, dh0 + size_t(r0) * N, size_t(N), pg, pb, r0, r1, N);
  };
  if (double(M) * N >= hostmath::kParallelElements)
    hostpar::parallel_for(int(chunks), chunk);
  else
    for (unsigned ch = 0; ch < chunks; ++ch) chunk(int(ch));
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

void layernorm_input_backward_host(const float* dh1, const float* h0, const float* X, const float* gamma,
                                   const float* mean, const float* rstd, float* dgamma, float* dbeta, float* dW_in,
                                   int M, int N, int D, float* partial) {
  check_layernorm_shape(M, N, "layernorm_input_backward_host");
  if (D < 1) throw std::invalid_argument("layernorm_input_backward_host: need D >= 1, got " + std::to_string(D));
  const unsigned rows = colsum::rows_per_chunk(size_t(M)), chunks = colsum::chunks(size_t(M));
  // Per chunk: dgamma [N], dbeta [N], then dW_in transposed [D, N].
  const size_t stride = size_t(2 + D) * N;
  constexpr int kBlock = 16;  // rows of dh0 held at once (32 KiB at N = 512: they stay in L1)
  auto chunk = [&](int ch) {
    thread_local std::vector<float> block;  // grows once per thread
    if (block.size() < size_t(kBlock) * N) block.resize(size_t(kBlock) * N);
    float* part = partial + ch * stride;
    float* pw = part + 2 * size_t(N);
    std::fill(part, part + stride, 0.f);
    const int r_end = std::min<int>(M, int((ch + 1) * rows));
    for (int b0 = int(ch * rows); b0 < r_end; b0 += kBlock) {
      const int b1 = std::min(r_end, b0 + kBlock);
      backward_rows(dh1, h0, gamma, mean, rstd, block.data(), size_t(N), part, part + N, b0, b1, N);
      const float* x = X + size_t(b0) * D;
      if (!avx512mm::add_weight_grad_transposed(block.data(), x, pw, b1 - b0, N, D))
        add_outer_rows(block.data(), x, pw, b1 - b0, N, D);
    }
  };
  if (double(M) * N >= hostmath::kParallelElements)
    hostpar::parallel_for(int(chunks), chunk);
  else
    for (unsigned ch = 0; ch < chunks; ++ch) chunk(int(ch));
  thread_local std::vector<float> total;  // dgamma, dbeta, dW_in transposed [D, N]; grows once
  if (total.size() < stride) total.resize(stride);
  finish_columns(partial, chunks, stride, int(stride), total.data());
  std::copy_n(total.data(), N, dgamma);
  std::copy_n(total.data() + N, N, dbeta);
  const float* wt = total.data() + 2 * size_t(N);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < D; ++k) dW_in[size_t(n) * D + k] = wt[size_t(k) * N + n];
}

}  // namespace grpo
