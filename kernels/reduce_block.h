// Block-level building blocks of the deterministic reductions (include from .cu files only).
// Every sum here is a fixed tree: lane offsets 16, 8, 4, 2, 1 inside a warp (several values at
// once: warp_sums_spread), then warp 0 over the per-warp results. Which thread adds what never depends on timing, so
// neither does a bit of the result; there are no atomics anywhere.
#pragma once
#include "core/host_device.h"
#include "kernels/reduce.h"

namespace grpo {

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // the warp's total in lane 0 (other lanes hold partial trees)
}

// Value i's sum in warp_sums_spread: lanes [i L, (i + 1) L) hold it, L = kSpreadLanes<V> (32 over
// V rounded up to a power of two).
template <unsigned V>
constexpr unsigned kSpreadLanes = V <= 1    ? 32
                                  : V <= 2  ? 16
                                  : V <= 4  ? 8
                                  : V <= 8  ? 4
                                  : V <= 16 ? 2
                                            : 1;

// The warp's sums of V values a lane, all at once: lane l gets the sum of value l / L (L =
// kSpreadLanes<V>; 0 where that is past V). At each of the first 5 - log2 L levels (lane
// offsets 16, 8, ...) a lane keeps half of its values and adds its partner's share of that
// half; the log2 L levels left add whole sums. 32 / L - 1 + log2 L shuffles in all, where V
// warp_sum trees take 5 V (3 values: 6 for 15; 6 values: 9 for 30; 2 values: 5 for 10). A fixed
// tree; the lanes that hold a value's sum hold the same bits (their last levels add the same two
// operands, in either order).
template <unsigned V>
__device__ __forceinline__ float warp_sums_spread(const float (&in)[V]) {
  static_assert(V >= 1 && V <= 32, "at most one value a lane once halved");
  constexpr unsigned P = 32 / kSpreadLanes<V>;
  float v[P];
#pragma unroll
  for (unsigned i = 0; i < P; ++i) v[i] = i < V ? in[i] : 0.f;
  const unsigned lane = threadIdx.x % 32;
#pragma unroll
  for (unsigned n = P, o = 16; n > 1; n /= 2, o /= 2) {
    const bool upper = (lane & o) != 0;
#pragma unroll
    for (unsigned i = 0; i < n / 2; ++i) {
      const float keep = upper ? v[i + n / 2] : v[i], send = upper ? v[i] : v[i + n / 2];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
    }
  }
#pragma unroll
  for (unsigned o = kSpreadLanes<V> / 2; o > 0; o /= 2) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
  return v[0];
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

// The mean of x[0..n) in one block of kReduceThreads threads, its additions in exactly the order
// of mean_f32_cuda's or mean_i32_cuda's two kernels (kernels/reduce.cu): the first stage's
// reduce_blocks(n) blocks one after another (Acc float for floats, long long for integers, each
// block's total rounded to a float), then the second stage's double sum of those partials. A
// kernel that needs a mean before its own work so gives the bits the two launches gave, without
// them. Every thread of the block must call it; the mean is in thread 0.
template <class Acc, class T>
__device__ __forceinline__ float block_mean_two_stages(const T* x, int n) {
  __shared__ Acc warp_acc[kReduceThreads / 32];
  __shared__ double warp_d[kReduceThreads / 32];
  __shared__ float partials[kReduceMaxBlocks];
  const unsigned blocks = reduce_blocks(size_t(n));
  for (unsigned b = 0; b < blocks; ++b) {
    Acc s = Acc(0);
    for (int i = int(b * kReduceThreads + threadIdx.x); i < n; i += int(blocks * kReduceThreads)) s += x[i];
    s = block_sum<kReduceThreads>(s, warp_acc);
    if (threadIdx.x == 0) partials[b] = static_cast<float>(s);
  }
  __syncthreads();
  double d = threadIdx.x < blocks ? double(partials[threadIdx.x]) : 0.0;
  d = block_sum<kReduceThreads>(d, warp_d);
  return static_cast<float>(d / n);
}

}  // namespace grpo
