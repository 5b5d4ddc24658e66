// Welford's running (count, mean, M2) over a row and its merge across the threads of the row, for
// the LayerNorm kernels (kernels/layernorm.cu) and the fused rollout step (engine/cuda/): one
// merge order, so that every kernel using it gets the same kind of summary. After apex's
// layer_norm_cuda_kernel.cu, Chan merge across lanes (shuffles) and warps (shared memory); within
// a thread, one summary for each group of four values (welford_group4), not an update a value.
#pragma once
#include "core/host_device.h"

// In their own namespace: kernels/returns.h has a host-and-device Welford of its own, whose merge
// differs in how it treats an empty side.
namespace grpo::row_welford_ops {

struct Welford {
  float n, mean, m2;
};

// a and b merged with b's weight wb = b.n / n, n = a.n + b.n: the one expression every merge below
// evaluates, so that each rounds (and nvcc contracts) the same way.
__device__ __forceinline__ Welford welford_weighted(Welford a, Welford b, float n, float wb) {
  const float d = b.mean - a.mean;
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// Chan et al.: merge two partial (count, mean, M2) summaries. Equal counts, every merge of the
// shuffle tree where a row fills its threads evenly, weigh b by exactly 0.5 (b.n / (2 b.n) in
// IEEE arithmetic): the branch skips the division's ~10 instructions on the reduction's chain.
__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  float wb = 0.5f;
  if (a.n != b.n) wb = b.n / n;
  return welford_weighted(a, b, n, wb);
}

// welford_merge of two summaries of the same count, not 0: its weight-0.5 case, the same
// operations in the same order (so the same bits), without the two tests and their branches. On
// the rollout's chain every merge of a warp's shuffle tree is one of these where the row fills
// every thread with the same number of groups (row_welford's kEqualCounts): the tests, each a
// branch to resolve, were about half of a merge's instructions.
__device__ __forceinline__ Welford welford_merge_equal(Welford a, Welford b) {
  return welford_weighted(a, b, a.n + b.n, 0.5f);
}

// welford_merge of two summaries whose counts are not both 0: its weight b.n / n always (exactly
// 0.5 where the counts are equal, so the same bits), without the tests. A division whose inputs
// are counts alone, so that it can issue before the means it weighs arrive.
__device__ __forceinline__ Welford welford_merge_nonempty(Welford a, Welford b) {
  const float n = a.n + b.n;
  return welford_weighted(a, b, n, b.n / n);
}

// The summary of one group of four values, the first n of them (1 <= n <= 4; the others are
// ignored): their sum over n, then the squares about that mean, each in a pairwise order.
// Welford's update a value would spend a division on each, ~10 instructions on a chain through
// all of a thread's values; a group here takes ~12 instructions and one division (none for a
// whole group where the compiler sees n = 4: / 4 is a multiplication). A thread's groups then
// meet by welford_append in order, the same sequence whichever of them a kernel keeps in
// registers.
__device__ __forceinline__ Welford welford_group4(const float (&x)[4], unsigned n) {
  float v[4];
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) v[k] = k < n ? x[k] : 0.f;
  const float mean = ((v[0] + v[1]) + (v[2] + v[3])) / float(n);
  float d[4];
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) d[k] = k < n ? v[k] - mean : 0.f;
  return {float(n), mean, fmaf(d[0], d[0], d[1] * d[1]) + fmaf(d[2], d[2], d[3] * d[3])};
}

// w, then the values g summarises after them: g itself for an empty w (the merge's division by
// a count of 1 spared).
__device__ __forceinline__ Welford welford_append(const Welford& w, const Welford& g) {
  return w.n == 0.f ? g : welford_merge(w, g);
}

// The row's merged summary, identical in every thread of the row. A shfl_down tree into lane 0
// then a broadcast (a butterfly would leave lanes with results that differ in the last bit,
// since the merge is not symmetric); with more than one warp per row the warp summaries meet in
// `smem` (3 * kRowThreads / 32 floats, unused for a warp per row) and every thread merges them
// in warp order. The row's threads are threadIdx.x % kRowThreads; a block of kRowThreads > 32
// holds one row. Ends after a __syncthreads in block mode: smem may not be reused before another.
// kEqualCounts: the caller's promise that every thread of the row holds the same count, not 0
// (the row's length a multiple of four values a thread): each level of a warp's tree then merges
// equal counts, by welford_merge_equal, the same bits with no branch. (A lane past the warp's end
// merges with itself, equal too.) Not the warps' summaries: their fold in order merges 2, 3, ...
// warps' counts with one warp's, weighed by a division (welford_merge_nonempty: no test).
template <int kRowThreads, bool kEqualCounts = false>
__device__ __forceinline__ Welford row_welford(Welford w, float* smem) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  const auto merge = [](const Welford& a, const Welford& b) {
    return kEqualCounts ? welford_merge_equal(a, b) : welford_merge(a, b);
  };
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    w = merge(w, {__shfl_down_sync(kAll, w.n, o), __shfl_down_sync(kAll, w.mean, o), __shfl_down_sync(kAll, w.m2, o)});
  if constexpr (kRowThreads == 32) {
    (void)smem;
    return {__shfl_sync(kAll, w.n, 0), __shfl_sync(kAll, w.mean, 0), __shfl_sync(kAll, w.m2, 0)};
  } else {
    constexpr int kWarps = kRowThreads / 32;
    const unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) smem[warp] = w.n, smem[kWarps + warp] = w.mean, smem[2 * kWarps + warp] = w.m2;
    __syncthreads();
    Welford r{smem[0], smem[kWarps], smem[2 * kWarps]};
    for (int i = 1; i < kWarps; ++i) {
      const Welford b{smem[i], smem[kWarps + i], smem[2 * kWarps + i]};
      r = kEqualCounts ? welford_merge_nonempty(r, b) : welford_merge(r, b);
    }
    return r;
  }
}

}  // namespace grpo::row_welford_ops
