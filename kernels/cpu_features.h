// Run-time CPU feature checks for the host twins' vectorised paths (the kernels never need them).
#pragma once

namespace grpo {

#if defined(__x86_64__) || defined(__i386__)
// Whether this CPU runs AVX2 code; asked once. __builtin_cpu_init first: a static initialiser may
// run before libgcc's own constructor has filled the feature bits.
inline bool cpu_has_avx2() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
}
#endif

}  // namespace grpo
