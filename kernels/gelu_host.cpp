// Host twins of gelu.cu, written for speed (the host executor trains on them): rows in parallel,
// a vectorised GELU over column chunks (kernels/gelu_vec_host.h), masks from dropout_fast_host.h.
// dbias uses the kernels' deterministic two-stage layout (activations_colsum.h): float partial
// sums per fixed row chunk in the caller's scratch, then chunks added in order in double, so the
// result does not depend on the thread count. scratch == nullptr (tests) allocates instead.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/dropout_fast_host.h"
#include "kernels/gelu.h"
#include "kernels/gelu_vec_host.h"
#include "cpu/parallel.h"

namespace grpo {

namespace {
constexpr int kChunk = 256;  // columns per vector pass (a multiple of 32: whole vectorised mask blocks)

void check_shape(int M, int N, const char* op) {
  if (M < 0 || N < 0) throw std::invalid_argument(std::string(op) + ": negative shape");
}

// The row loops are compiled for AVX2 and for the SSE2 baseline and picked at load time (GCC
// target_clones); elementwise float work without FMA, so both clones give the same bits.
#if defined(__x86_64__) && defined(__linux__)
#define GRPO_GELU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GRPO_GELU_CLONES
#endif

GRPO_GELU_CLONES void forward_rows(const float* a, const float* bias, float* out, int r0, int r1, int N,
                                   const DropoutSpec& spec, uint32_t epoch) {
  for (int r = r0; r < r1; ++r) {
    float x[kChunk], g[kChunk], keep[kChunk];
    for (int c0 = 0; c0 < N; c0 += kChunk) {
      const int n = std::min(kChunk, N - c0);
      const float* ar = a + size_t(r) * N + c0;
#pragma omp simd
      for (int j = 0; j < n; ++j) x[j] = ar[j] + bias[c0 + j];
      hostmath::gelu_n(x, g, n);
      dropout_row_scales_host(spec, epoch, uint32_t(r), c0, n, keep);
      float* o = out + size_t(r) * N + c0;
#pragma omp simd
      for (int j = 0; j < n; ++j) o[j] = g[j] * keep[j];
    }
  }
}

// Rows [r0, r1) of the backward; their dbias partial sums into part (zeroed here).
GRPO_GELU_CLONES void backward_rows(const float* dout, const float* a, const float* bias, float* da, float* part,
                                    int r0, int r1, int N, const DropoutSpec& spec, uint32_t epoch) {
  std::fill(part, part + N, 0.f);
  for (int r = r0; r < r1; ++r) {
    float x[kChunk], g[kChunk], dg[kChunk], keep[kChunk];
    for (int c0 = 0; c0 < N; c0 += kChunk) {
      const int n = std::min(kChunk, N - c0);
      const size_t o = size_t(r) * N + c0;
#pragma omp simd
      for (int j = 0; j < n; ++j) x[j] = a[o + j] + bias[c0 + j];
      hostmath::gelu_and_grad_n(x, g, dg, n);
      dropout_row_scales_host(spec, epoch, uint32_t(r), c0, n, keep);
#pragma omp simd
      for (int j = 0; j < n; ++j) {
        const float d = dout[o + j] * keep[j] * dg[j];
        da[o + j] = d;
        part[c0 + j] += d;
      }
    }
  }
}

}  // namespace

void bias_gelu_dropout_forward_host(const float* a, const float* bias, float* out, int M, int N,
                                    const DropoutSpec& spec) {
  check_dropout(spec, "bias_gelu_dropout_forward_host");
  check_shape(M, N, "bias_gelu_dropout_forward_host");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  hostpar::for_row_ranges(M, N, hostmath::kParallelElements,
                          [&](int r0, int r1) { forward_rows(a, bias, out, r0, r1, N, spec, epoch); });
}

void bias_gelu_dropout_forward_rows_host(const float* a, const float* bias, float* out, int r0, int r1, int N,
                                         const DropoutSpec& spec) {
  check_dropout(spec, "bias_gelu_dropout_forward_rows_host");
  check_shape(r1 - r0, N, "bias_gelu_dropout_forward_rows_host");
  forward_rows(a, bias, out, r0, r1, N, spec, spec.p > 0.f ? *spec.epoch : 0u);
}

void bias_gelu_dropout_backward_host(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                     int M, int N, const DropoutSpec& spec, float* scratch) {
  check_dropout(spec, "bias_gelu_dropout_backward_host");
  check_shape(M, N, "bias_gelu_dropout_backward_host");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const unsigned rows = colsum::rows_per_chunk(size_t(M)), chunks = colsum::chunks(size_t(M));
  std::vector<float> own;
  if (scratch == nullptr) {
    own.resize(size_t(chunks) * N);
    scratch = own.data();
  }
  auto chunk = [&](int ch) {
    backward_rows(dout, a, bias, da, scratch + size_t(ch) * N, int(ch * rows), std::min<int>(M, int((ch + 1) * rows)),
                  N, spec, epoch);
  };
  if (double(M) * N >= hostmath::kParallelElements)
    hostpar::parallel_for(int(chunks), chunk);
  else
    for (unsigned ch = 0; ch < chunks; ++ch) chunk(int(ch));
  for (int c = 0; c < N; ++c) {
    double s = 0;
    for (unsigned ch = 0; ch < chunks; ++ch) s += scratch[size_t(ch) * N + c];
    dbias[c] = float(s);
  }
}

}  // namespace grpo
