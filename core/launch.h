// The one place a kernel is launched. Under nvcc this is <<<>>> plus an error check; under g++
// in the SIMT flavour the same call hands the kernel and a by-value copy of its arguments to
// the emulator (simt/), which runs it on the CPU or records it into a captured graph.
// Include this only from .cu files (they are compiled by nvcc, or by g++ with simt.h).
#pragma once
#include <cstddef>
#include <utility>

#include "core/cuda_check.h"

namespace grpo {

template <class... P, class... A>
inline void launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A&&... args) {
#if defined(__CUDACC__)
  kernel<<<grid, block, smem, stream>>>(std::forward<A>(args)...);
  CUDA_CHECK(cudaGetLastError());
#elif defined(GRPO_SIMT)
  CUDA_CHECK(::simt::launch(kernel, grid, block, smem, stream, std::forward<A>(args)...));
#else
#error "core/launch.h is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif
}

// A launch of clusters of `cluster` blocks along x, for cudaLaunchKernelEx and
// cudaOccupancyMaxActiveClusters; the configuration points at `attr`, which the caller keeps.
inline cudaLaunchConfig_t cluster_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, unsigned cluster,
                                         cudaLaunchAttribute& attr) {
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
}

// The same with the blocks in thread-block clusters of `cluster` blocks along x (sm_90; grid.x a
// multiple of cluster, at most 8): the blocks of a cluster are co-scheduled and may wait for
// each other (core/cluster.cuh).
template <class... P, class... A>
inline void launch_cluster(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                           unsigned cluster, A&&... args) {
#if defined(__CUDACC__)
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = cluster_config(grid, block, smem, stream, cluster, attr);
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
#elif defined(GRPO_SIMT)
  CUDA_CHECK(::simt::launch_cluster(kernel, grid, block, smem, stream, cluster, std::forward<A>(args)...));
#endif
}

// The same, allowed to start before the kernel launched just before it in `stream` (or in a
// captured graph, before its predecessor node) has finished: programmatic dependent launch,
// sm_90. The kernel must call wait_for_previous_kernel() (core/grid_dependency.cuh) before it
// touches what that kernel writes or reads; until then its blocks may run their own setup while
// the previous kernel finishes, and the launch's latency hides behind it. The emulator runs it
// as an ordinary launch.
template <class... P, class... A>
inline void launch_overlapped(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                              A&&... args) {
#if defined(__CUDACC__)
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
#elif defined(GRPO_SIMT)
  CUDA_CHECK(::simt::launch(kernel, grid, block, smem, stream, std::forward<A>(args)...));
#endif
}

inline unsigned ceil_div(size_t n, unsigned d) { return static_cast<unsigned>((n + d - 1) / d); }

}  // namespace grpo

// Dynamic shared memory, declared one way for both compilers. nvcc: the block's extern arena
// (one untyped array so that kernels with different element types do not clash). SIMT: the
// emulator's per-block arena, poisoned at block start so a read before a write shows.
#if defined(__CUDACC__)
#define GRPO_DYNAMIC_SHARED(T, name)                                  \
  extern __shared__ __align__(16) unsigned char grpo_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(grpo_dynamic_smem_)
#else
#define GRPO_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::simt::dynamic_shared())
#endif
