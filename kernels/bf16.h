// bfloat16 storage: the top 16 bits of an fp32 (8 exponent bits, 7 mantissa bits). Under
// --precision bf16 the operands of fc1's products are stored this way (docs/design.md,
// "Precision"); sums stay fp32. One rounding everywhere, round to nearest with ties to even,
// written with integer operations so that the kernels, the host twins and the emulator round
// every value to the very same bits (a product of two bf16 values is exact in fp32, so only
// the summation order separates a kernel from its twin). NaN stays NaN (quiet); a finite value
// that rounds past the largest bf16 becomes an infinity, as IEEE rounding does. (On a GPU the
// vector stores take the hardware's conversion, to_bf16x2: the same bits but a NaN's payload.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

// Plain 16 bits (not cuda_bf16.h's type, which the emulator cannot compile); cuBLASLt reads
// arrays of it as CUDA_R_16BF.
struct Bf16 {
  uint16_t bits;
};
static_assert(sizeof(Bf16) == 2, "Bf16 must be the 16 bits cuBLASLt reads as CUDA_R_16BF");

GRPO_HD uint32_t f32_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

GRPO_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

GRPO_HD Bf16 to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16{uint16_t((u >> 16) | 0x0040u)};  // NaN: keep it quiet
  return Bf16{uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};                    // carries into the exponent
}

GRPO_HD float to_float(Bf16 b) { return f32_from_bits(uint32_t(b.bits) << 16); }

// lo and hi rounded to bf16 and packed as a bf16x2 word (lo in the low half), for the vector
// stores of rows. On a GPU (sm_80+) one cvt.rn.bf16x2.f32, where to_bf16's integer sequence is
// ~8 instructions a value: the same rounding (to nearest, ties to even, past the largest bf16 to
// an infinity, subnormals kept), so the same bits for every value but a NaN, which comes out as a
// NaN without to_bf16's payload. The host and the emulator take to_bf16.
GRPO_HD uint32_t to_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // the first source goes high
  return r;
#else
  return uint32_t(to_bf16(lo).bits) | uint32_t(to_bf16(hi).bits) << 16;
#endif
}

// x rounded to the nearest bf16, kept as an fp32 (what a bf16 operand contributes to a sum).
GRPO_HD float round_bf16(float x) { return to_float(to_bf16(x)); }

// y[i] = to_bf16(x[i]) for i < n.
void to_bf16_host(const float* x, Bf16* y, size_t n);
void to_float_host(const Bf16* x, float* y, size_t n);
#if defined(GRPO_HAVE_CUDA)
// Reads 4n bytes, writes 2n; one thread per 4 elements (vectorised when x and y are aligned).
void to_bf16_cuda(const float* x, Bf16* y, size_t n, cudaStream_t stream);
#endif

}  // namespace grpo
