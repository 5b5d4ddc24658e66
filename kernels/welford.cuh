// Welford's running (count, mean, M2) over a row and its merge across the threads of the row, for
// the LayerNorm kernels (kernels/layernorm.cu) and the fused rollout step (engine/cuda/): one
// merge order, so that every kernel using it gets the same kind of summary. After apex's
// layer_norm_cuda_kernel.cu: per-thread Welford, Chan merge across lanes (shuffles) and warps
// (shared memory).
#pragma once
#include "core/host_device.h"

// In their own namespace: kernels/returns.h has a host-and-device Welford of its own, whose merge
// differs in how it treats an empty side.
namespace grpo::row_welford_ops {

struct Welford {
  float n, mean, m2;
};

__device__ __forceinline__ void welford_add(Welford& w, float x) {
  w.n += 1.f;
  const float d = x - w.mean;
  w.mean += d / w.n;
  w.m2 += d * (x - w.mean);
}

// Chan et al.: merge two partial (count, mean, M2) summaries. Equal counts, every merge of the
// shuffle tree where a row fills its threads evenly, weigh b by exactly 0.5 (b.n / (2 b.n) in
// IEEE arithmetic): the branch skips the division's ~10 instructions on the reduction's chain.
__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  float wb = 0.5f;
  if (a.n != b.n) wb = b.n / n;
  const float d = b.mean - a.mean;
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// The row's merged summary, identical in every thread of the row. A shfl_down tree into lane 0
// then a broadcast (a butterfly would leave lanes with results that differ in the last bit,
// since the merge is not symmetric); with more than one warp per row the warp summaries meet in
// `smem` (3 * kRowThreads / 32 floats, unused for a warp per row) and every thread merges them
// in warp order. The row's threads are threadIdx.x % kRowThreads; a block of kRowThreads > 32
// holds one row. Ends after a __syncthreads in block mode: smem may not be reused before another.
template <int kRowThreads>
__device__ __forceinline__ Welford row_welford(Welford w, float* smem) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    w = welford_merge(
        w, {__shfl_down_sync(kAll, w.n, o), __shfl_down_sync(kAll, w.mean, o), __shfl_down_sync(kAll, w.m2, o)});
  if constexpr (kRowThreads == 32) {
    (void)smem;
    return {__shfl_sync(kAll, w.n, 0), __shfl_sync(kAll, w.mean, 0), __shfl_sync(kAll, w.m2, 0)};
  } else {
    constexpr int kWarps = kRowThreads / 32;
    const unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) smem[warp] = w.n, smem[kWarps + warp] = w.mean, smem[2 * kWarps + warp] = w.m2;
    __syncthreads();
    Welford r{smem[0], smem[kWarps], smem[2 * kWarps]};
    for (int i = 1; i < kWarps; ++i) r = welford_merge(r, {smem[i], smem[kWarps + i], smem[2 * kWarps + i]});
    return r;
  }
}

}  // namespace grpo::row_welford_ops
