// phase_mark, the device side of core/phase_clock.h. nvcc: clock64, the SM's cycle counter;
// SIMT: the host's steady clock in nanoseconds (simt/intrinsics.h), monotonic as the SM's counter
// is, and meaningless as a time.
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

}  // namespace grpo
