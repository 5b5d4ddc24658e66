// Run-time CPU feature checks for the host twins' vectorised paths (the kernels never need them).
//
// GRPO_HOST_ISA=sse2 or avx2 in the environment caps the paths these checks allow, so the tests
// run the narrower paths too on a wider CPU (tools/test does). Only the explicit dispatches obey
// it; GCC target_clones pick by the CPU alone.
#pragma once
#include <cstdlib>
#include <cstring>

namespace grpo {

#if defined(__x86_64__) || defined(__i386__)
// 0 = SSE2 (the build's baseline), 1 = AVX2, 2 = AVX-512F with BMI2: the widest this CPU runs,
// capped by GRPO_HOST_ISA; asked once. __builtin_cpu_init first: a static initialiser may run
// before libgcc's own constructor has filled the feature bits.
inline int host_isa_level() {
  static const int level = [] {
    __builtin_cpu_init();
    int l = 0;
    if (__builtin_cpu_supports("avx2")) l = 1;
    if (l == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("bmi2")) l = 2;
    if (const char* cap = std::getenv("GRPO_HOST_ISA")) {
      if (std::strcmp(cap, "sse2") == 0)
        l = 0;
      else if (std::strcmp(cap, "avx2") == 0 && l > 1)
        l = 1;
    }
    return l;
  }();
  return level;
}

inline bool cpu_has_avx2() { return host_isa_level() >= 1; }
// AVX-512F and BMI2 (the 16-lane GELU and Philox paths; pdep builds the mask words).
inline bool cpu_has_avx512() { return host_isa_level() >= 2; }
#endif

}  // namespace grpo
