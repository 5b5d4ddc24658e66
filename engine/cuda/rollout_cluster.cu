// The whole rollout in one launch (rollout_cluster.h): thread-block clusters of kClusterBlocks
// blocks, each cluster a share of the games, each block of it a share of fc1's output columns,
// whose rows of fc1.weight it keeps in shared memory for all T steps. A step is the product of
// the cluster's h1 rows with the block's columns (a1), the cluster barrier, the fused step of
// rollout_step_block for the block's games (the next step's h1), and the barrier again: no
// launch, no graph node and no read of W1 from L2 between steps.
//
// Each a1 element is one fmaf chain over k ascending from 0, plus 0 (the bias the few-row kernel
// adds, absent here): the sums of kernels/matmul_few_rows.cu, and the row-local part is the same
// function as rollout_step.cu's, so a run is the stepwise one bit for bit.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/cluster.cuh"
#include "core/launch.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_step.h"
#include "engine/cuda/rollout_step_block.cuh"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace grpo {

namespace {

using namespace rollout_step_detail;

constexpr unsigned kRowTile = 8;  // rows a thread sums at once against one column of W1

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(Bf16 x) { return to_float(x); }
// Four consecutive elements of a shared-memory row, 16-byte (fp32) or 8-byte (bf16) aligned.
__device__ __forceinline__ void load4_smem(const float* p, float (&v)[4]) {
  const float4 t = *reinterpret_cast<const float4*>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4_smem(const Bf16* p, float (&v)[4]) {
  const uint2 t = *reinterpret_cast<const uint2*>(p);
  v[0] = to_float(Bf16{uint16_t(t.x & 0xFFFFu)}), v[1] = to_float(Bf16{uint16_t(t.x >> 16)});
  v[2] = to_float(Bf16{uint16_t(t.y & 0xFFFFu)}), v[3] = to_float(Bf16{uint16_t(t.y >> 16)});
}

// Shared-memory rows of H elements (W1's rows, the h1 rows) are `stride` apart: a multiple of 4
// (aligned four-element loads) plus 4, so that the lanes of a warp reading the same k of
// different rows hit different banks.
GRPO_HD unsigned smem_stride(unsigned H) { return (H + 3) / 4 * 4 + 4; }

// The product for the cluster's `rows` h1 rows (xs) with the block's `cols` columns of W1 (ws):
// a thread owns a column j and every sets-th row from its set, up to kRowTile at a time, and
// walks k four at a time, so one load of W1 serves up to kRowTile fmaf and one load of a row
// (a warp broadcast) serves four.
template <class T>
__device__ __forceinline__ void product(const T* xs, const T* ws, unsigned rows, unsigned cols, unsigned width,
                                        unsigned H, float* a1, size_t first_row, unsigned c0) {
  const unsigned stride = smem_stride(H), sets = max(1u, unsigned(kStepThreads) / width);
  for (unsigned item = threadIdx.x; item < sets * width; item += kStepThreads) {
    const unsigned j = item % width, set = item / width;
    if (j >= cols) continue;
    const T* w = ws + size_t(j) * stride;
    for (unsigned r0 = set; r0 < rows; r0 += sets * kRowTile) {
      const unsigned n = min(kRowTile, (rows - r0 + sets - 1) / sets);  // rows r0, r0 + sets, ...
      float acc[kRowTile];
#pragma unroll
      for (unsigned i = 0; i < kRowTile; ++i) acc[i] = 0.f;
      unsigned k = 0;
      for (; k + 4 <= H; k += 4) {
        float wv[4];
        load4_smem(w + k, wv);
#pragma unroll
        for (unsigned i = 0; i < kRowTile; ++i) {
          if (i >= n) break;
          float xv[4];
          load4_smem(xs + size_t(r0 + i * sets) * stride + k, xv);
#pragma unroll
          for (unsigned q = 0; q < 4; ++q) acc[i] = fmaf(xv[q], wv[q], acc[i]);
        }
      }
      for (; k < H; ++k)
        for (unsigned i = 0; i < n; ++i)
          acc[i] = fmaf(widen(xs[size_t(r0 + i * sets) * stride + k]), widen(w[k]), acc[i]);
#pragma unroll
      for (unsigned i = 0; i < kRowTile; ++i)
        if (i < n) a1[(first_row + r0 + i * sets) * H + c0 + j] = acc[i] + 0.f;
    }
  }
}

// X: h1 (or its bf16 copy) at step 0's rows; W: fc1.weight [H, H] (or its bf16 copy). Not
// __restrict__: the kernel itself writes the h1 rows of the later steps.
template <class T>
__global__ void __launch_bounds__(kStepThreads)
    rollout_cluster_kernel(GameConfig cfg, Ops::RolloutStep s, const T* X, const T* W, uint32_t steps,
                           unsigned clusters, bool vec) {
  __shared__ StepShared sh;
  GRPO_DYNAMIC_SHARED(T, smem);
  const unsigned C = cluster_blocks(), rank = cluster_block_rank(), cluster = blockIdx.x / C;
  const unsigned N = unsigned(s.N), H = unsigned(s.H), tid = threadIdx.x, stride = smem_stride(H);
  const unsigned g0 = unsigned(size_t(cluster) * N / clusters), g1 = unsigned(size_t(cluster + 1) * N / clusters);
  const unsigned rows = g1 - g0, width = (H + C - 1) / C;  // columns per block (the last may have fewer)
  const unsigned c0 = min(H, rank * width), cols = min(H, c0 + width) - c0;
  T* ws = smem;                           // [cols][stride]: the block's rows of W1
  T* xs = smem + size_t(width) * stride;  // [rows][stride]: this step's h1 rows of the cluster's games
  for (unsigned i = tid; i < cols * H; i += kStepThreads) ws[size_t(i / H) * stride + i % H] = W[size_t(c0) * H + i];

  for (uint32_t t = 0; t < steps; ++t) {
    const size_t shift = size_t(t) * N;  // step t's rows
    for (unsigned i = tid; i < rows * H; i += kStepThreads)
      xs[size_t(i / H) * stride + i % H] = X[(shift + g0) * H + i];
    __syncthreads();
    product(xs, ws, rows, cols, width, H, s.now.a1, shift + g0, c0);
    GRPO_CLUSTER_SYNC();  // the cluster's a1 rows of step t are whole
    for (unsigned g = g0 + rank; g < g1; g += C) {
      rollout_step_block(cfg, s, t, shift, g, t + 1 == steps, vec, sh);
      __syncthreads();  // sh is the next game's
    }
    GRPO_CLUSTER_SYNC();  // the cluster's h1 rows of step t + 1 are whole, xs is free
  }
}

struct Plan {
  unsigned clusters = 0;  // 0: the shape does not fit
  size_t smem = 0;
};

// Dynamic shared memory a block may have: the device's opt-in limit less the static StepShared;
// 0 where the device runs no clusters.
size_t smem_limit() {
  int dev = 0, optin = 0, cluster_launch = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
  if (!cluster_launch) return 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return size_t(std::max(optin - int(sizeof(StepShared)), 0));
}

// The kernel may ask for up to smem_limit(): always the same value, so a later launch never
// lowers the limit below what a captured graph's node asks for. Not a stream operation: allowed
// while a stream captures.
template <class T>
void allow_smem(size_t limit) {
  CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&rollout_cluster_kernel<T>),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)));
}

// Clusters of p's size that the device can hold at once (its answer: the blocks of a cluster
// share a GPC, so it can be fewer than SMs / 8).
template <class T>
int resident_clusters(const Plan& p) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config =
      cluster_config(dim3(p.clusters * kClusterBlocks), dim3(kStepThreads), p.smem, nullptr, kClusterBlocks, attr);
  int n = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(&rollout_cluster_kernel<T>), &config));
  return n;
}

// The clusters and the shared memory per block. By default one game a block (ceil(N / 8)
// clusters) where the device holds that many clusters at once, else the most clusters it holds
// (more rows, so more shared memory, each): the blocks of a cluster wait for each other every
// step, so one-game blocks make the shortest step, and a cluster left waiting for room would
// run its whole rollout after the others. Worked out once per device and shape (the occupancy
// queries are not free, and an eager run asks at every epoch), which also sets the kernel's
// shared-memory limit on that device.
template <class T>
Plan plan_uncached(int N, int H, unsigned clusters) {
  const size_t width = (size_t(H) + kClusterBlocks - 1) / kClusterBlocks, limit = smem_limit();
  const auto with = [&](int k) {
    Plan p;
    p.clusters = unsigned(std::clamp(k, 1, N));
    p.smem = (width + (size_t(N) + p.clusters - 1) / p.clusters) * smem_stride(unsigned(H)) * sizeof(T);
    return p;
  };
  if (limit == 0) return Plan{};
  allow_smem<T>(limit);
  if (clusters) {
    const Plan p = with(int(clusters));
    return p.smem <= limit ? p : Plan{};
  }
  for (int k = (N + int(kClusterBlocks) - 1) / int(kClusterBlocks); k >= 1; --k) {
    const Plan p = with(k);
    if (p.smem <= limit && resident_clusters<T>(p) >= k) return p;
  }
  return Plan{};
}

template <class T>
Plan plan_for(int N, int H, unsigned clusters = 0) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static std::map<std::tuple<int, int, int, unsigned>, Plan> plans;
  const auto key = std::make_tuple(dev, N, H, clusters);
  const auto it = plans.find(key);
  return it != plans.end() ? it->second : plans.emplace(key, plan_uncached<T>(N, H, clusters)).first->second;
}

template <class T>
void launch_rollout(const GameConfig& game, const Ops::RolloutStep& first, const T* X, const T* W, int steps,
                    cudaStream_t stream, unsigned clusters) {
  const Plan p = plan_for<T>(first.N, first.H, clusters);
  if (p.clusters == 0)
    throw std::invalid_argument("rollout_cluster_cuda: " + std::to_string(first.N) + " games at hidden " +
                                std::to_string(first.H) + " need more shared memory per block than the " +
                                std::to_string(smem_limit()) + " bytes the device has, or clusters it cannot hold");
  launch_cluster(rollout_cluster_kernel<T>, dim3(p.clusters * kClusterBlocks), dim3(kStepThreads), p.smem, stream,
                 kClusterBlocks, game, first, X, W, uint32_t(steps), p.clusters, rollout_step_vec(first));
}

}  // namespace

bool rollout_cluster_fits(int N, int H, bool bf16) {
  if (!linear_forward_takes_few_rows(N, H, H, false)) return false;
  return (bf16 ? plan_for<Bf16>(N, H) : plan_for<float>(N, H)).clusters > 0;
}

void rollout_cluster_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                          unsigned clusters) {
  check_rollout_step_args(game, first, "rollout_cluster_cuda");
  if (steps < 1 || first.t != 0 || (first.obs_next == nullptr && steps > 1))
    throw std::invalid_argument("rollout_cluster_cuda: needs step 0's views and at least one step");
  if (!linear_forward_takes_few_rows(first.N, first.H, first.H, false))
    throw std::invalid_argument("rollout_cluster_cuda: " + std::to_string(first.N) + " games at hidden " +
                                std::to_string(first.H) + " are not the few-row product's shape");
  if (first.N == 0) return;
  if (first.p.fc1_w_bf16)
    launch_rollout(game, first, static_cast<const Bf16*>(first.now.h1_bf16),
                   static_cast<const Bf16*>(first.p.fc1_w_bf16), steps, stream, clusters);
  else
    launch_rollout(game, first, static_cast<const float*>(first.now.h1), static_cast<const float*>(first.p.fc1_w),
                   steps, stream, clusters);
}

}  // namespace grpo
