// A copy of one 32-bit word from global to shared memory that the thread does not wait for
// (PTX `cp.async`, sm_80 and later): it holds no register while the word is in flight, so a
// kernel at its register limit can start a load early and find the word in shared memory later.
// The thread that issued copies calls async_copy_wait() before a barrier after which any thread
// reads them. nvcc: inline PTX in device code (a plain copy below sm_80); SIMT: a plain copy at
// the call, which the emulator's checks see as the thread's global read and shared write there
// (so a missing wait cannot show there, only on a GPU).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
namespace grpo {
__device__ __forceinline__ void async_copy4(uint32_t* shared_dst, const uint32_t* global_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(shared_dst))),
      "l"(__cvta_generic_to_global(global_src))
      : "memory");
#else
  *shared_dst = *global_src;
#endif
}
// Every async_copy4 of the thread has landed, and is visible to the thread (to the block after a
// barrier).
__device__ __forceinline__ void async_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
}  // namespace grpo
#elif defined(GRPO_SIMT)
namespace grpo {
inline void async_copy4(uint32_t* shared_dst, const uint32_t* global_src) { *shared_dst = *global_src; }
inline void async_copy_wait() {}
}  // namespace grpo
#else
#error "core/async_copy.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif
