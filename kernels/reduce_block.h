// Block-level building blocks of the deterministic reductions (include from .cu files only).
// Every sum here is a fixed tree: lane offsets 16, 8, 4, 2, 1 inside a warp, then warp 0 over
// the per-warp results. Which thread adds what never depends on timing, so neither does a bit
// of the result; there are no atomics anywhere.
#pragma once
#include "core/host_device.h"

namespace grpo {

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // the warp's total in lane 0 (other lanes hold partial trees)
}

// Sum of v over a block of BLOCK threads (every thread of the block must call it, with a
// uniform condition around the call). The total is valid in thread 0 only. `warp_sums` is
// BLOCK/32 elements of shared memory, owned by the caller so that kernels can reuse it; the
// trailing barrier makes back-to-back calls with the same buffer safe.
template <int BLOCK, class T>
__device__ __forceinline__ T block_sum(T v, T* warp_sums) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "whole warps, at most 1024 threads");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  T total = T(0);
  if (warp == 0) total = warp_sum(lane < BLOCK / 32 ? warp_sums[lane] : T(0));
  __syncthreads();
  return total;
}

}  // namespace grpo
