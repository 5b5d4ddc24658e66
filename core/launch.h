// The one place a kernel is launched. Under nvcc this is <<<>>> plus an error check; under g++
// in the SIMT flavour the same call hands the kernel and a by-value copy of its arguments to
// the emulator (simt/), which runs it on the CPU or records it into a captured graph.
// Include this only from .cu files (they are compiled by nvcc, or by g++ with simt.h).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
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

// A cudaLaunchKernelEx configuration with the one attribute `attr`, which the caller keeps.
inline cudaLaunchConfig_t config_with(dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                      cudaLaunchAttribute& attr) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
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
  return config_with(grid, block, smem, stream, attr);
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

// The least shared-memory carveout (cudaFuncAttributePreferredSharedMemoryCarveout: a percentage
// of an SM's shared memory, per_sm bytes) that holds `blocks` blocks of block_smem bytes each
// (static and dynamic) plus the `reserved` bytes the device keeps per block; 100 at most.
inline int l1_carveout_percent(size_t block_smem, size_t reserved, unsigned blocks, size_t per_sm) {
  if (per_sm == 0) return 100;
  const size_t need = size_t(blocks) * (block_smem + reserved);
  return need >= per_sm ? 100 : int((need * 100 + per_sm - 1) / per_sm);
}

// Asks the device to keep no more shared memory on an SM than blocks_per_sm blocks of `kernel`
// (its static shared memory, no dynamic) take, so that the rest of the SM's unified L1 and shared
// memory caches global loads: where every block of a launch reads the same parameters, those stay
// in L1 only if it is large enough. By default the device may take more than the blocks need (a
// configuration for more blocks than the registers allow). A hint, set once per kernel and device:
// the device rounds it up to a configuration it has.
inline void prefer_l1(const void* kernel, unsigned blocks_per_sm) {
  static std::mutex m;
  static std::map<std::pair<const void*, int>, bool> done;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const std::lock_guard<std::mutex> lock(m);
  if (done[std::make_pair(kernel, dev)]) return;
  cudaFuncAttributes f{};
  CUDA_CHECK(cudaFuncGetAttributes(&f, kernel));
  int per_sm = 0, reserved = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  const int percent = l1_carveout_percent(f.sharedSizeBytes, size_t(reserved), blocks_per_sm, size_t(per_sm));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
  done[std::make_pair(kernel, dev)] = true;
}

#if defined(__CUDACC__)
namespace launch_detail {
// Whether `kernel` on this device was compiled where wait_for_previous_kernel() waits: PTX for
// sm_90 or later (from older PTX, or on an older GPU, it compiles to nothing). Asked once per
// kernel and device.
inline bool waits_for_previous(const void* kernel) {
  static std::mutex m;
  static std::map<std::pair<const void*, int>, bool> known;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const std::lock_guard<std::mutex> lock(m);
  const auto key = std::make_pair(kernel, dev);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  cudaFuncAttributes f{};
  CUDA_CHECK(cudaFuncGetAttributes(&f, kernel));
  return known[key] = f.ptxVersion >= 90 && f.binaryVersion >= 90;
}

// Whether the next operation captured on `stream` would follow one kernel node that nothing else
// follows yet: a programmatic edge may leave a kernel node only, and the edges are kept one to one,
// a chain (the shape measured on a GPU), also where streams fork from a kernel (the first stream
// captured after it gets the edge) or join into one node. True when the stream is not capturing.
inline bool follows_kernels(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t n = 0;
  CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, &edges, &n));
  if (status != cudaStreamCaptureStatusActive) return true;
  if (n != 1) return false;
  cudaGraphNodeType type{};
  CUDA_CHECK(cudaGraphNodeGetType(deps[0], &type));
  size_t dependents = 0;
  CUDA_CHECK(cudaGraphNodeGetDependentNodes(deps[0], nullptr, nullptr, &dependents));
  return type == cudaGraphNodeTypeKernel && dependents == 0;
}

// Whether a launch of `kernel` on `stream` now may be programmatic (launch_overlapped's conditions).
inline bool may_overlap(const void* kernel, cudaStream_t stream) {
  return waits_for_previous(kernel) && follows_kernels(stream);
}

// The attribute that makes a launch programmatic.
inline cudaLaunchAttribute programmatic() {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return attr;
}
}  // namespace launch_detail
#endif

// The same, allowed to start before the kernel launched just before it in `stream` (or in a
// captured graph, before its predecessor node) has finished: programmatic dependent launch,
// sm_90. The kernel must call wait_for_previous_kernel() (core/grid_dependency.cuh) before it
// touches what that kernel writes or reads; until then its blocks may run their own setup while
// the previous kernel finishes, and the launch's latency hides behind it. An ordinary launch
// where that cannot hold or be expressed: a kernel compiled for an older GPU (its wait is
// empty), or in a capture anything but one kernel node that nothing else follows yet
// (launch_detail::follows_kernels). The emulator runs it in turn like any
// launch and checks its accesses before the wait (simt::launch_overlapped).
template <class... P, class... A>
inline void launch_overlapped(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                              A&&... args) {
#if defined(__CUDACC__)
  if (!launch_detail::may_overlap(reinterpret_cast<const void*>(kernel), stream))
    return launch(kernel, grid, block, smem, stream, std::forward<A>(args)...);
  cudaLaunchAttribute attr = launch_detail::programmatic();
  const cudaLaunchConfig_t config = config_with(grid, block, smem, stream, attr);
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
#elif defined(GRPO_SIMT)
  CUDA_CHECK(::simt::launch_overlapped(kernel, grid, block, smem, stream, std::forward<A>(args)...));
#endif
}

// launch_cluster, allowed to start before the kernel before it has finished, as launch_overlapped
// is (under the same conditions; else an ordinary cluster launch): the two attributes together, as
// CUTLASS's sm_90 kernels take them.
template <class... P, class... A>
inline void launch_cluster_overlapped(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                      unsigned cluster, A&&... args) {
#if defined(__CUDACC__)
  if (!launch_detail::may_overlap(reinterpret_cast<const void*>(kernel), stream))
    return launch_cluster(kernel, grid, block, smem, stream, cluster, std::forward<A>(args)...);
  cudaLaunchAttribute attrs[2];
  cudaLaunchConfig_t config = cluster_config(grid, block, smem, stream, cluster, attrs[0]);
  attrs[1] = launch_detail::programmatic();
  config.attrs = attrs;
  config.numAttrs = 2;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
#elif defined(GRPO_SIMT)
  CUDA_CHECK(::simt::launch_cluster_overlapped(kernel, grid, block, smem, stream, cluster, std::forward<A>(args)...));
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
