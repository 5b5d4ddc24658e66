// A hint that a thread will soon read an address: its cache line comes into L1 (PTX `prefetch.L1`
// on a generic address, which does nothing where the address is shared memory). It holds no
// register and returns at once, so a thread can ask for the lines of a later phase before it
// waits at a barrier. nvcc: inline PTX in device code; SIMT: the emulator has no cache, nothing
// to do.
#pragma once

#if defined(__CUDACC__)
namespace grpo {
__device__ __forceinline__ void prefetch_l1(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.L1 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}
}  // namespace grpo
#elif defined(GRPO_SIMT)
namespace grpo {
inline void prefetch_l1(const void*) {}
}  // namespace grpo
#else
#error "core/prefetch.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif
