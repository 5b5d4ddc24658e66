// Returns and advantages kernels (see returns.h).
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"

namespace grpo {

namespace {

constexpr unsigned kScanThreads = 128;

// Steps whose rewards a thread loads before it sums them: one memory round trip per
// kReturnsTile steps instead of one per step, which the sum's dependence on the step before
// would otherwise wait out.
constexpr int kReturnsTile = 32;

// One thread per game, from the last step back; at each step a warp reads and writes 32
// consecutive floats of row t. Each element is read and written by its thread alone, read
// first, so the call may run in place.
__global__ void discounted_returns_kernel(const float* rewards, float* returns, int T, int N, float gamma) {
  follow_previous_kernel();
  const int g = blockIdx.x * kScanThreads + threadIdx.x;
  if (g >= N) return;
  float R = 0.f;
  for (int top = T - 1; top >= 0; top -= kReturnsTile) {
    float r[kReturnsTile];
#pragma unroll
    for (int k = 0; k < kReturnsTile; ++k)
      if (top - k >= 0) r[k] = rewards[static_cast<size_t>(top - k) * N + g];
#pragma unroll
    for (int k = 0; k < kReturnsTile; ++k)
      if (top - k >= 0) {
        R = discount_step(r[k], gamma, R);
        returns[static_cast<size_t>(top - k) * N + g] = R;
      }
  }
}

// Chan merge down a fixed shuffle tree: lane 0 ends with the warp's statistics. The shuffles
// run unconditionally in every lane; only the arithmetic after them branches.
__device__ __forceinline__ Welford warp_welford(Welford w) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Welford o{__shfl_down_sync(0xffffffffu, w.n, offset), __shfl_down_sync(0xffffffffu, w.mean, offset),
                    __shfl_down_sync(0xffffffffu, w.m2, offset)};
    w = welford_merge(w, o);
  }
  return w;
}

// The block's statistics in thread 0: warps first, then warp 0 over the per-warp results.
__device__ __forceinline__ Welford block_welford(Welford w, Welford* warp_stats) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  w = warp_welford(w);
  if (lane == 0) warp_stats[warp] = w;
  __syncthreads();
  Welford total{0.f, 0.f, 0.f};
  if (warp == 0) total = warp_welford(lane < int{kReduceThreads / 32} ? warp_stats[lane] : Welford{0.f, 0.f, 0.f});
  return total;
}

// Level 1: Welford over each thread's grid-stride elements, Chan merge over the block; the
// block's (n, mean, M2) go to partials[b], partials[blocks + b], partials[2 blocks + b].
// Every value is shifted by x[0] first: with returns around 1e3 the merges would otherwise
// subtract means whose last bit is worth 6e-5, and the std would lose digits (measured: 6e-6
// relative error at n = 37 unshifted, 1e-7 shifted).
__global__ void welford_partials_kernel(const float* __restrict__ x, int count, float* __restrict__ partials) {
  follow_previous_kernel();
  __shared__ Welford warp_stats[kReduceThreads / 32];
  const float shift = x[0];
  Welford w{0.f, 0.f, 0.f};
  for (int i = blockIdx.x * kReduceThreads + threadIdx.x; i < count; i += gridDim.x * kReduceThreads)
    w = welford_add(w, x[i] - shift);
  w = block_welford(w, warp_stats);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = w.n;
    partials[gridDim.x + blockIdx.x] = w.mean;
    partials[2 * gridDim.x + blockIdx.x] = w.m2;
  }
}

// Level 2 in every block of the advantages: one partial per thread (blocks <= kReduceThreads),
// the same merge tree in each, so every block holds the same {mean, sample std} (the shift
// added back to the mean), and block 0 also stores them in stats_out. Then a thread an element.
// Each block finishing the statistics itself costs ~100 partials' loads from L2 and one merge
// tree; a kernel of its own before it cost a dependent launch.
__global__ void advantages_kernel(const float* __restrict__ returns, float* __restrict__ adv, int count,
                                  const float* __restrict__ partials, int blocks, float* __restrict__ stats_out) {
  follow_previous_kernel();
  __shared__ Welford warp_stats[kReduceThreads / 32];
  __shared__ float stats[2];
  const int b = threadIdx.x;
  Welford w{0.f, 0.f, 0.f};
  if (b < blocks) w = Welford{partials[b], partials[blocks + b], partials[2 * blocks + b]};
  w = block_welford(w, warp_stats);
  if (threadIdx.x == 0) {
    stats[0] = returns[0] + w.mean;
    stats[1] = sqrtf(w.m2 / (w.n - 1.f));
    if (blockIdx.x == 0) stats_out[0] = stats[0], stats_out[1] = stats[1];
  }
  __syncthreads();
  const int i = blockIdx.x * kReduceThreads + threadIdx.x;
  if (i >= count) return;
  adv[i] = advantage_from(returns[i], stats[0], stats[1]);
}

// One block per group: Welford over the group's T R rewards (shifted by its first one, as
// above), then every thread normalises its own elements. Rows of a group are R consecutive
// floats every N: a warp reads short runs, but the whole call touches 8 T N bytes once per pass.
__global__ void group_normalize_kernel(const float* rewards, float* out, int T, int G, int R,
                                       float* __restrict__ stats_out) {
  follow_previous_kernel();
  __shared__ Welford warp_stats[kReduceThreads / 32];
  __shared__ float stats[2];
  const int g = blockIdx.x, count = T * R;
  const size_t N = static_cast<size_t>(G) * R;
  auto at = [&](int e) { return static_cast<size_t>(e / R) * N + static_cast<size_t>(g) * R + e % R; };
  const float shift = rewards[at(0)];
  Welford w{0.f, 0.f, 0.f};
  for (int e = threadIdx.x; e < count; e += kReduceThreads) w = welford_add(w, rewards[at(e)] - shift);
  w = block_welford(w, warp_stats);
  if (threadIdx.x == 0) {
    stats[0] = shift + w.mean;
    stats[1] = sqrtf(w.m2 / (w.n - 1.f));
    if (stats_out) {
      stats_out[2 * g] = stats[0];
      stats_out[2 * g + 1] = stats[1];
    }
  }
  __syncthreads();
  const float m = stats[0], s = stats[1];
  for (int e = threadIdx.x; e < count; e += kReduceThreads) out[at(e)] = group_normalized(rewards[at(e)], m, s);
}

}  // namespace

// Bytes per call: 4 T N read twice, 4 T N written, 8 G of statistics when asked.
void group_normalize_rewards_cuda(const float* rewards, float* out, int T, int G, int R, float* stats_out,
                                  cudaStream_t stream) {
  check_group_shape(T, G, R, "group_normalize_rewards_cuda");
  launch_overlapped(group_normalize_kernel, static_cast<unsigned>(G), kReduceThreads, 0, stream, rewards, out, T, G, R,
                    stats_out);
}

// Bytes per call: 8 T N (each reward read once, each return written once).
void discounted_returns_cuda(const float* rewards, float* returns, int T, int N, float gamma, cudaStream_t stream) {
  if (T < 0 || N < 0)
    throw std::invalid_argument("discounted_returns_cuda: T and N must be >= 0, got " + std::to_string(T) + ", " +
                                std::to_string(N));
  if (T == 0 || N == 0) return;
  launch_overlapped(discounted_returns_kernel, ceil_div(N, kScanThreads), kScanThreads, 0, stream, rewards, returns, T,
                    N, gamma);
}

// Bytes per call: 4 count read twice (statistics, then advantages), 4 count written, 24 * blocks
// of scratch (<= 6 KiB, read by every block of the advantages, from L2) and 8 for the statistics.
void normalize_advantages_cuda(const float* returns, float* adv, int count, float* scratch, float* stats_out,
                               cudaStream_t stream) {
  check_advantage_count(count, "normalize_advantages_cuda");
  static_assert(kReduceMaxBlocks <= kReduceThreads, "level 2 takes one partial per thread");
  const unsigned blocks = reduce_blocks(count);
  launch_overlapped(welford_partials_kernel, blocks, kReduceThreads, 0, stream, returns, count, scratch);
  launch_overlapped(advantages_kernel, ceil_div(count, kReduceThreads), kReduceThreads, 0, stream, returns, adv, count,
                    static_cast<const float*>(scratch), static_cast<int>(blocks), stats_out);
}

}  // namespace grpo
