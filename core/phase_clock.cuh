// phase_mark and span_mark, the device side of core/phase_clock.h. nvcc: clock64, the SM's cycle
// counter, and %smid and %globaltimer for the spans; SIMT: the host's steady clock in nanoseconds
// (simt/intrinsics.h) for both clocks, monotonic as the SM's counter is, and meaningless as a
// time, and each block its own SM (no two ever share one there).
#pragma once
#include <cstdint>

#include "core/phase_clock.h"

#if !defined(__CUDACC__) && !defined(GRPO_SIMT)
#error "core/phase_clock.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif

namespace grpo {

// Any thread may call it; lane 0 of its warp records, where the clocks are on and cover the
// block, the step, the mark and the warp.
__device__ __forceinline__ void phase_mark(const PhaseClocks& c, uint32_t step, unsigned mark) {
  if (c.at == nullptr) return;
  const unsigned warp = threadIdx.x / 32;
  if (threadIdx.x % 32 != 0 || blockIdx.x >= c.blocks || step >= c.steps || mark >= c.marks || warp >= c.warps) return;
  c.at[c.index(blockIdx.x, step, mark, warp)] = clock64();
}

// Thread 0 of the block, where the spans are on and cover it: its SM and the global timer, at
// the start of the block's work (end false) or at its end.
__device__ __forceinline__ void span_mark(const PhaseClocks& c, bool end) {
  if (c.spans == nullptr || threadIdx.x != 0 || blockIdx.x >= c.span_blocks) return;
  long long* s = c.spans + size_t(blockIdx.x) * kSpanFields;
#if defined(GRPO_SIMT)
  const long long sm = blockIdx.x, now = clock64();
#else
  unsigned sm_id;
  unsigned long long ns;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_id));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  const long long sm = sm_id, now = static_cast<long long>(ns);
#endif
  if (!end) s[kSpanSm] = sm;
  s[end ? kSpanEnd : kSpanStart] = now;
}

}  // namespace grpo
