#include "cpu/gemm_packed.h"

#include <algorithm>
#include <cstdint>

#include "cpu/features.h"
#include "cpu/parallel.h"

#if defined(__x86_64__)
#include "cpu/simd.h"
#define GRPO_PACKED_AVX512 1
#endif

namespace grpo::packed {

namespace {

constexpr int kPanel = 32;  // columns per panel: two 16-float vectors
constexpr int kRows = 8;    // rows of A per block: 8 x 2 accumulators

template <class At>
void pack(int inner, int cols, At at, const float* source, PackedB& out) {
  out.panels = nullptr;
  out.source = nullptr;
#if defined(GRPO_PACKED_AVX512)
  if (!cpu_has_avx512()) return;
  const int panels = (cols + kPanel - 1) / kPanel;
  const size_t n = size_t(panels) * inner * kPanel;
  if (out.storage.size() < n + 16) out.storage.resize(n + 16);  // grows once; reused every epoch
  const uintptr_t addr = reinterpret_cast<uintptr_t>(out.storage.data());
  out.panels = out.storage.data() + ((64 - addr % 64) % 64) / sizeof(float);
  std::fill(out.panels, out.panels + n, 0.f);
  for (int p = 0; p < panels; ++p)
    for (int i = 0; i < inner; ++i) {
      float* dst = out.panels + (size_t(p) * inner + i) * kPanel;
      for (int j = 0; j < kPanel && p * kPanel + j < cols; ++j) dst[j] = at(i, p * kPanel + j);
    }
  out.inner = inner;
  out.cols = cols;
  out.source = source;
#else
  (void)inner, (void)cols, (void)at, (void)source;
#endif
}

#if defined(GRPO_PACKED_AVX512)
// R rows of A (R <= 8) times one panel: Y[r, 32p .. 32p + 32) (masked to the real columns).
template <int R>
__attribute__((target("avx512f"))) void block(const float* A, int lda, const float* bp, int inner, const float* bias,
                                              float* Y, int ldy, __mmask16 m0, __mmask16 m1) {
  __m512 c0[R], c1[R];
  for (int i = 0; i < R; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int k = 0; k < inner; ++k) {
    const __m512 b0 = _mm512_load_ps(bp + size_t(k) * kPanel), b1 = _mm512_load_ps(bp + size_t(k) * kPanel + 16);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 a = _mm512_set1_ps(A[size_t(i) * lda + k]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
  }
  const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < R; ++i) {
    _mm512_mask_storeu_ps(Y + size_t(i) * ldy, m0, _mm512_add_ps(c0[i], bias0));
    _mm512_mask_storeu_ps(Y + size_t(i) * ldy + 16, m1, _mm512_add_ps(c1[i], bias1));
  }
}

using BlockFn = void (*)(const float*, int, const float*, int, const float*, float*, int, __mmask16, __mmask16);
constexpr BlockFn kBlocks[kRows + 1] = {nullptr,  block<1>, block<2>, block<3>, block<4>,
                                        block<5>, block<6>, block<7>, block<8>};

// Rows [r0, r1) of A against panels [p0, p1): each block of rows meets every panel while it is
// in L1.
void rows_panels(const float* A, int r0, int r1, const PackedB& B, const float* bias, float* Y, int p0, int p1) {
  for (int r = r0; r < r1; r += kRows) {
    const int n = std::min(kRows, r1 - r);
    for (int p = p0; p < p1; ++p) {
      const int c0 = p * kPanel, left = B.cols - c0;
      const __mmask16 m0 = __mmask16(left >= 16 ? 0xFFFF : (1u << left) - 1u);
      const __mmask16 m1 = __mmask16(left >= 32 ? 0xFFFF : left <= 16 ? 0 : (1u << (left - 16)) - 1u);
      kBlocks[n](A + size_t(r) * B.inner, B.inner, B.panels + size_t(p) * B.inner * kPanel, B.inner,
                 bias ? bias + c0 : nullptr, Y + size_t(r) * B.cols + c0, B.cols, m0, m1);
    }
  }
}
#endif

}  // namespace

void pack_transposed(const float* W, int N, int K, PackedB& out) {
  pack(
      K, N, [&](int k, int n) { return W[size_t(n) * K + k]; }, W, out);
}

bool gemm(const float* A, int M, const PackedB& B, const float* bias, float* Y) {
#if defined(GRPO_PACKED_AVX512)
  if (!B.ready() || !cpu_has_avx512()) return false;
  if (M <= 0) return true;
  // Work items: 4 panels (128 columns) by up to 256 rows. At the rollout's 136 x 512 that is 4
  // items for 2 threads; one panel per item costs more in the pool's hand-offs than it balances.
  const int panels = (B.cols + kPanel - 1) / kPanel, slab = 256, slabs = (M + slab - 1) / slab;
  constexpr int per = 4;
  const int groups = (panels + per - 1) / per;
  auto item = [&](int w) {
    const int g = w % groups, s = w / groups;
    rows_panels(A, s * slab, std::min(M, (s + 1) * slab), B, bias, Y, g * per, std::min(panels, (g + 1) * per));
  };
  if (2.0 * M * B.inner * B.cols >= hostpar::kParallelFlops)
    hostpar::parallel_for(groups * slabs, item);
  else
    for (int w = 0; w < groups * slabs; ++w) item(w);
  return true;
#else
  (void)A, (void)M, (void)B, (void)bias, (void)Y;
  return false;
#endif
}

}  // namespace grpo::packed
