// What the cluster kernel's plan (rollout_cluster.cu) asks the device:
// the dynamic shared memory a block may opt into, and how many clusters of kClusterBlocks blocks
// it holds at once. Host code; each function takes every compilation a launch may pick, so that
// a plan holds for all of them.
#pragma once
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <limits>

#include "core/cuda_check.h"
#include "core/launch.h"
#include "engine/cuda/rollout_cluster.h"

namespace grpo::cluster_plan {

using Kernels = std::initializer_list<const void*>;

// The dynamic shared memory a block may have: the device's opt-in limit less the largest static
// part as compiled (at least `static_floor`, what the kernels declare themselves: the emulator
// does not count it); 0 where the device runs no clusters.
inline size_t smem_limit(Kernels kernels, size_t static_floor) {
  int dev = 0, optin = 0, cluster_launch = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
  if (!cluster_launch) return 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  size_t fixed = static_floor;
  for (const void* kernel : kernels) {
    cudaFuncAttributes f{};
    CUDA_CHECK(cudaFuncGetAttributes(&f, kernel));
    fixed = std::max(fixed, f.sharedSizeBytes);
  }
  return size_t(std::max(optin - int(fixed), 0));
}

// Each kernel may ask for up to `limit` (smem_limit's): always the same value, so a later launch
// never lowers the limit below what a captured graph's node asks for. Not a stream operation:
// allowed while a stream captures.
inline void allow_smem(Kernels kernels, size_t limit) {
  for (const void* kernel : kernels)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)));
}

// Clusters of kClusterBlocks blocks of `threads` threads and `smem` bytes each that the device
// holds at once (its answer: the blocks of a cluster share a GPC, so it can be fewer than SMs /
// 8), the fewest of the kernels' (their registers differ), for a launch of `clusters`.
inline int resident_clusters(Kernels kernels, unsigned clusters, unsigned threads, size_t smem) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config =
      cluster_config(dim3(clusters * kClusterBlocks), dim3(threads), smem, nullptr, kClusterBlocks, attr);
  int fewest = std::numeric_limits<int>::max();
  for (const void* kernel : kernels) {
    int n = 0;
    // A device that cannot answer for this configuration (under MPS or MIG, say) holds none: the
    // rollout then runs stepwise. The error is not sticky; it is cleared so no later check sees it.
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    fewest = std::min(fewest, n);
  }
  return fewest;
}

}  // namespace grpo::cluster_plan
