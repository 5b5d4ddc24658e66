#include "cpu/matmul_avx512.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "cpu/features.h"
#include "cpu/parallel.h"

#if defined(__x86_64__)
#include "cpu/simd.h"
#define GRPO_MM_AVX512 1
#endif

namespace grpo::avx512mm {

void transpose(const float* W, int N, int K, float* Wt) {
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) Wt[size_t(k) * N + n] = W[size_t(n) * K + k];
}

#if defined(GRPO_MM_AVX512)
namespace {

constexpr int kSliceRows = 512;  // rows per partial sum of weight_grad_few_inputs

#define GRPO_AVX512 __attribute__((target("avx512f")))

GRPO_AVX512 inline __mmask16 tail_mask(int n) { return __mmask16((1u << n) - 1u); }

GRPO_AVX512 void few_outputs_rows(const float* X, const float* W, const float* bias, float* Y, int r0, int r1, int N,
                                  int K) {
  for (int r = r0; r < r1; ++r) {
    const float* x = X + size_t(r) * K;
    for (int c0 = 0; c0 < N; c0 += 4) {
      const int nc = std::min(4, N - c0);
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      int k = 0;
      for (; k + 16 <= K; k += 16) {
        const __m512 xv = _mm512_loadu_ps(x + k);
        for (int j = 0; j < nc; ++j) acc[j] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(W + size_t(c0 + j) * K + k), acc[j]);
      }
      if (k < K) {
        const __mmask16 m = tail_mask(K - k);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
        for (int j = 0; j < nc; ++j)
          acc[j] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, W + size_t(c0 + j) * K + k), acc[j]);
      }
      for (int j = 0; j < nc; ++j) {
        const float s = _mm512_reduce_add_ps(acc[j]);
        Y[size_t(r) * N + c0 + j] = bias ? s + bias[c0 + j] : s;
      }
    }
  }
}

// Wt is W^T: [K, N]. Four blocks of 16 columns at a time: four independent FMA chains, so
// the loop runs at the FMA units' throughput rather than one chain's latency; the last
// columns (N % 64) one masked block at a time.
GRPO_AVX512 void few_inputs_rows(const float* X, const float* Wt, const float* bias, float* Y, int r0, int r1, int N,
                                 int K) {
  const int full = N / 64 * 64;
  for (int r = r0; r < r1; ++r) {
    const float* x = X + size_t(r) * K;
    float* y = Y + size_t(r) * N;
    for (int n0 = 0; n0 < full; n0 += 64) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      if (bias) {
        a0 = _mm512_loadu_ps(bias + n0);
        a1 = _mm512_loadu_ps(bias + n0 + 16);
        a2 = _mm512_loadu_ps(bias + n0 + 32);
        a3 = _mm512_loadu_ps(bias + n0 + 48);
      }
      for (int k = 0; k < K; ++k) {
        const __m512 xk = _mm512_set1_ps(x[k]);
        const float* w = Wt + size_t(k) * N + n0;
        a0 = _mm512_fmadd_ps(xk, _mm512_loadu_ps(w), a0);
        a1 = _mm512_fmadd_ps(xk, _mm512_loadu_ps(w + 16), a1);
        a2 = _mm512_fmadd_ps(xk, _mm512_loadu_ps(w + 32), a2);
        a3 = _mm512_fmadd_ps(xk, _mm512_loadu_ps(w + 48), a3);
      }
      _mm512_storeu_ps(y + n0, a0);
      _mm512_storeu_ps(y + n0 + 16, a1);
      _mm512_storeu_ps(y + n0 + 32, a2);
      _mm512_storeu_ps(y + n0 + 48, a3);
    }
    for (int n0 = full; n0 < N; n0 += 16) {
      const __mmask16 m = tail_mask(std::min(16, N - n0));
      __m512 acc = bias ? _mm512_maskz_loadu_ps(m, bias + n0) : _mm512_setzero_ps();
      for (int k = 0; k < K; ++k)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(x[k]), _mm512_maskz_loadu_ps(m, Wt + size_t(k) * N + n0), acc);
      _mm512_mask_storeu_ps(y + n0, m, acc);
    }
  }
}

// P[KK, N] = sum over rows [m0, m1) of X[m, k] dY[m, :] (one slice's partial, transposed). KK is
// a template argument so that the KK accumulators live in registers. The rows go 16 at a time
// (32 KiB of dY at the small preset, which stays in L1 across the column blocks) with the
// partial in P (L1 too) between them: a whole slice per column block re-read dY from L2 N/16
// times and ran at a third of this speed.
template <int KK>
GRPO_AVX512 void weight_grad_slice(const float* dY, const float* X, float* P, int m0, int m1, int N, bool zero) {
  constexpr int kRows = 16;
  for (int n0 = 0; zero && n0 < N; n0 += 16)
    for (int k = 0; k < KK; ++k)
      _mm512_mask_storeu_ps(P + size_t(k) * N + n0, tail_mask(std::min(16, N - n0)), _mm512_setzero_ps());
  for (int b0 = m0; b0 < m1; b0 += kRows) {
    const int b1 = std::min(m1, b0 + kRows);
    for (int n0 = 0; n0 < N; n0 += 16) {
      const __mmask16 mk = tail_mask(std::min(16, N - n0));
      __m512 acc[KK];
      for (int k = 0; k < KK; ++k) acc[k] = _mm512_maskz_loadu_ps(mk, P + size_t(k) * N + n0);
      for (int m = b0; m < b1; ++m) {
        const __m512 yv = _mm512_maskz_loadu_ps(mk, dY + size_t(m) * N + n0);
        const float* x = X + size_t(m) * KK;
        for (int k = 0; k < KK; ++k) acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(x[k]), yv, acc[k]);
      }
      for (int k = 0; k < KK; ++k) _mm512_mask_storeu_ps(P + size_t(k) * N + n0, mk, acc[k]);
    }
  }
}

using SliceFn = void (*)(const float*, const float*, float*, int, int, int, bool);
template <int... Ks>
constexpr SliceFn slice_fn(int K, std::integer_sequence<int, Ks...>) {
  constexpr SliceFn table[] = {weight_grad_slice<Ks + 1>...};
  return table[K - 1];
}

}  // namespace

bool forward_few_outputs(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K) {
  if (!cpu_has_avx512() || N >= 16) return false;
  const double parallel_rows = hostpar::kParallelFlops / (2.0 * N * K);
  hostpar::for_row_ranges(M, 1, parallel_rows, [&](int r0, int r1) { few_outputs_rows(X, W, bias, Y, r0, r1, N, K); });
  return true;
}

bool forward_few_inputs_rows(const float* X, const float* Wt, float* Y, int r0, int r1, int N, int K) {
  if (!cpu_has_avx512() || K >= 16) return false;
  few_inputs_rows(X, Wt, nullptr, Y, r0, r1, N, K);
  return true;
}

bool forward_few_inputs(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K) {
  if (!cpu_has_avx512() || K >= 16) return false;
  thread_local std::vector<float> wt;  // grows once per thread, never per call
  if (wt.size() < size_t(K) * N) wt.resize(size_t(K) * N);
  transpose(W, N, K, wt.data());
  const float* t = wt.data();
  const double parallel_rows = hostpar::kParallelFlops / (2.0 * N * K);
  hostpar::for_row_ranges(M, 1, parallel_rows, [&](int r0, int r1) { few_inputs_rows(X, t, bias, Y, r0, r1, N, K); });
  return true;
}

bool weight_grad_few_inputs(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate) {
  if (!cpu_has_avx512() || K >= 16) return false;
  const int slices = std::max(1, (M + kSliceRows - 1) / kSliceRows);
  const size_t plane = size_t(K) * N;
  thread_local std::vector<float> partials;  // grows once per thread, never per call
  if (partials.size() < slices * plane) partials.resize(slices * plane);
  float* P = partials.data();
  const SliceFn fn = slice_fn(K, std::make_integer_sequence<int, 15>{});
  auto slice = [&](int s) {
    fn(dY, X, P + size_t(s) * plane, s * kSliceRows, std::min(M, (s + 1) * kSliceRows), N, true);
  };
  if (2.0 * M * N * K >= hostpar::kParallelFlops)
    hostpar::parallel_for(slices, slice);
  else
    for (int s = 0; s < slices; ++s) slice(s);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      double acc = accumulate ? dW[size_t(n) * K + k] : 0.0;
      for (int s = 0; s < slices; ++s) acc += P[size_t(s) * plane + size_t(k) * N + n];
      dW[size_t(n) * K + k] = float(acc);
    }
  return true;
}

bool add_weight_grad_transposed(const float* dY, const float* X, float* Pt, int M, int N, int K) {
  if (!cpu_has_avx512() || K >= 16) return false;
  slice_fn(K, std::make_integer_sequence<int, 15>{})(dY, X, Pt, 0, M, N, false);
  return true;
}

#else
bool add_weight_grad_transposed(const float*, const float*, float*, int, int, int) { return false; }
bool forward_few_outputs(const float*, const float*, const float*, float*, int, int, int) { return false; }
bool forward_few_inputs(const float*, const float*, const float*, float*, int, int, int) { return false; }
bool forward_few_inputs_rows(const float*, const float*, float*, int, int, int, int) { return false; }
bool weight_grad_few_inputs(const float*, const float*, float*, int, int, int, bool) { return false; }
#endif

}  // namespace grpo::avx512mm
