// Correctly rounded products and sums that the device compiler may not fuse into an FMA. Code
// that must give the same bits on the host and on the device (the rewards, AdamW, the schedule)
// writes its arithmetic through these. The host needs nothing: g++ in ISO C++ mode does not
// contract, and x86-64 without -mfma has no FMA to contract into.
#pragma once
#include "core/host_device.h"

namespace grpo {

GRPO_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GRPO_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
GRPO_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
GRPO_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

}  // namespace grpo
