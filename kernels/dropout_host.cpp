// Host twin of dropout.cu (the same counters, so the same mask bit for bit), and the vectorised
// mask rows of dropout_fast_host.h.
#include <algorithm>
#include <cmath>
#include <cstddef>

#if defined(__x86_64__) || defined(__i386__)
#include "cpu/simd.h"
#define GRPO_HOST_X86 1
#endif

#include "cpu/features.h"
#include "kernels/dropout.h"
#include "kernels/dropout_fast_host.h"

namespace grpo {

namespace {

// Four keep bits of group g (bit k for column 4g + k), written as four scales.
inline void scales_from_bits(unsigned bits, float scale, float* keep4, int count) {
  for (int k = 0; k < count; ++k) keep4[k] = (bits >> k & 1u) ? scale : 0.f;
}

#if defined(GRPO_HOST_X86)
// Every function down to the matching pop is compiled for avx2 (GCC's pragma; clang, which the
// fuzzing build uses, spells it as an attribute pushed onto each function).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
// hi and lo words of m * a in each 32-bit lane (the two Philox multiplies).
inline void mul_hilo(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i ev = _mm256_mul_epu32(a, m);                         // lanes 0, 2, 4, 6
  const __m256i od = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  lo = _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(ev, 32), od, 0xAA);
}

// Keep masks (all ones or zero) of words 0..3 for groups g0 .. g0 + 7, as philox4x32_10 with the
// counter of draw4(seed, purpose, epoch, step, row, g): (g, step, row, purpose << 24 | epoch).
inline void philox8(uint64_t seed, uint32_t step, uint32_t row, uint32_t hi_sub, uint32_t g0, __m256i thr,
                    __m256i w[4]) {
  __m256i c0 = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(g0)));
  __m256i c1 = _mm256_set1_epi32(int(step)), c2 = _mm256_set1_epi32(int(row)), c3 = _mm256_set1_epi32(int(hi_sub));
  const __m256i m0 = _mm256_set1_epi32(int(0xD2511F53u)), m1 = _mm256_set1_epi32(int(0xCD9E8D57u));
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    __m256i h0, l0, h1, l1;
    mul_hilo(c0, m0, h0, l0);
    mul_hilo(c2, m1, h1, l1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(h1, c1), _mm256_set1_epi32(int(k0)));
    c2 = _mm256_xor_si256(_mm256_xor_si256(h0, c3), _mm256_set1_epi32(int(k1)));
    c1 = l1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  const __m256i c[4] = {c0, c1, c2, c3};
  for (int k = 0; k < 4; ++k) {  // (bits >> 8) >= thr  <=>  max(bits >> 8, thr) == bits >> 8
    const __m256i s = _mm256_srli_epi32(c[k], 8);
    w[k] = _mm256_cmpeq_epi32(_mm256_max_epu32(s, thr), s);
  }
}

void row_scales_avx2(const DropoutSpec& spec, uint32_t epoch, uint32_t row, int c0, int n, float* keep) {
  const float scale = dropout_scale(spec.p);
  const uint32_t hi_sub = uint32_t(rng_subsequence(spec.purpose, epoch, row) >> 32);
  const __m256i thr = _mm256_set1_epi32(int(uint32_t(std::ceil(double(spec.p) * 16777216.0))));
  const __m256 sc = _mm256_set1_ps(scale);
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256i w[4];
    philox8(spec.seed, spec.step, row, hi_sub, uint32_t((c0 + j) / 4), thr, w);
    // w[k] lane g is column 4g + k: transpose the 4 x 8 masks to 32 consecutive columns.
    const __m256i a01 = _mm256_unpacklo_epi32(w[0], w[1]), b01 = _mm256_unpackhi_epi32(w[0], w[1]);
    const __m256i a23 = _mm256_unpacklo_epi32(w[2], w[3]), b23 = _mm256_unpackhi_epi32(w[2], w[3]);
    const __m256i g0 = _mm256_unpacklo_epi64(a01, a23), g1 = _mm256_unpackhi_epi64(a01, a23);
    const __m256i g2 = _mm256_unpacklo_epi64(b01, b23), g3 = _mm256_unpackhi_epi64(b01, b23);
    // g0 = groups 0 and 4, g1 = 1 and 5, g2 = 2 and 6, g3 = 3 and 7 (128-bit halves).
    const __m256i o[4] = {_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g2, g3, 0x20),
                          _mm256_permute2x128_si256(g0, g1, 0x31), _mm256_permute2x128_si256(g2, g3, 0x31)};
    for (int q = 0; q < 4; ++q) _mm256_storeu_ps(keep + j + 8 * q, _mm256_and_ps(_mm256_castsi256_ps(o[q]), sc));
  }
  for (; j < n; j += 4)
    scales_from_bits(dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, row, uint32_t((c0 + j) / 4)),
                     scale, keep + j, std::min(4, n - j));
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Every function down to the matching pop is compiled for avx512f,bmi2 (GCC's pragma; clang, which the
// fuzzing build uses, spells it as an attribute pushed onto each function).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,bmi2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,bmi2")
#endif
// philox8 sixteen groups wide: the same rounds on 512-bit vectors; a kept column is a mask bit.
inline void mul_hilo16(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i ev = _mm512_mul_epu32(a, m);                         // even lanes
  const __m512i od = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);  // odd lanes
  lo = _mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32));
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(ev, 32), od);
}

// Bit 4g + k of the result: word k of group g0 + g is kept (g < 16), i.e. bit c = column c.
inline uint64_t philox16_keep_bits(uint64_t seed, uint32_t step, uint32_t row, uint32_t hi_sub, uint32_t g0,
                                   __m512i thr) {
  __m512i c0 = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                _mm512_set1_epi32(int(g0)));
  __m512i c1 = _mm512_set1_epi32(int(step)), c2 = _mm512_set1_epi32(int(row)), c3 = _mm512_set1_epi32(int(hi_sub));
  const __m512i m0 = _mm512_set1_epi32(int(0xD2511F53u)), m1 = _mm512_set1_epi32(int(0xCD9E8D57u));
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
#pragma GCC unroll 10
  for (int round = 0; round < 10; ++round) {
    __m512i h0, l0, h1, l1;
    mul_hilo16(c0, m0, h0, l0);
    mul_hilo16(c2, m1, h1, l1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(h1, c1), _mm512_set1_epi32(int(k0)));
    c2 = _mm512_xor_si512(_mm512_xor_si512(h0, c3), _mm512_set1_epi32(int(k1)));
    c1 = l1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  const __m512i c[4] = {c0, c1, c2, c3};
  uint64_t bits = 0;
  for (int k = 0; k < 4; ++k) {  // keep <=> (bits >> 8) >= thr, spread to every fourth bit from k
    const unsigned m = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(c[k], 8), thr);
    bits |= _pdep_u64(m, 0x1111111111111111ull << k);
  }
  return bits;
}

void row_scales_avx512(const DropoutSpec& spec, uint32_t epoch, uint32_t row, int c0, int n, float* keep) {
  const float scale = dropout_scale(spec.p);
  const uint32_t hi_sub = uint32_t(rng_subsequence(spec.purpose, epoch, row) >> 32);
  const __m512i thr = _mm512_set1_epi32(int(uint32_t(std::ceil(double(spec.p) * 16777216.0))));
  const __m512 sc = _mm512_set1_ps(scale);
  int j = 0;
  for (; j + 64 <= n; j += 64) {
    const uint64_t bits = philox16_keep_bits(spec.seed, spec.step, row, hi_sub, uint32_t((c0 + j) / 4), thr);
    for (int q = 0; q < 4; ++q) _mm512_storeu_ps(keep + j + 16 * q, _mm512_maskz_mov_ps(__mmask16(bits >> 16 * q), sc));
  }
  for (; j < n; j += 4)
    scales_from_bits(dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, row, uint32_t((c0 + j) / 4)),
                     scale, keep + j, std::min(4, n - j));
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif

}  // namespace

void dropout_row_scales_host(const DropoutSpec& spec, uint32_t epoch, uint32_t row, int c0, int n, float* keep) {
  const float scale = dropout_scale(spec.p);
  if (spec.p == 0.f) {
    std::fill(keep, keep + n, scale);
    return;
  }
#if defined(GRPO_HOST_X86)
  if (cpu_has_avx512()) return row_scales_avx512(spec, epoch, row, c0, n, keep);
  if (cpu_has_avx2()) return row_scales_avx2(spec, epoch, row, c0, n, keep);
#endif
  for (int j = 0; j < n; j += 4)
    scales_from_bits(dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, row, uint32_t((c0 + j) / 4)),
                     scale, keep + j, std::min(4, n - j));
}

void dropout_apply_host(const float* x, float* y, int M, int N, const DropoutSpec& spec) {
  check_dropout(spec, "dropout_apply_host");
  if (M < 0 || N < 0) throw std::invalid_argument("dropout_apply_host: negative shape");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  constexpr int kChunk = 256;  // a multiple of 32: whole vectorised mask blocks
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    float keep[kChunk];
    for (int c0 = 0; c0 < N; c0 += kChunk) {
      const int n = std::min(kChunk, N - c0);
      dropout_row_scales_host(spec, epoch, uint32_t(r), c0, n, keep);
      const size_t o = size_t(r) * N + c0;
      for (int j = 0; j < n; ++j) y[o + j] = keep[j] != 0.f ? x[o + j] * keep[j] : 0.f;
    }
  }
}

}  // namespace grpo
