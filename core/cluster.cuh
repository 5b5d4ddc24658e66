// Thread-block clusters (sm_90) in kernel code, one spelling for both compilers: the barrier of
// every thread of every block of the running block's cluster, the block's rank in it, and
// distributed shared memory (cluster_map_shared: where an address of the block's dynamic shared
// memory lies in another block of the cluster; a cluster barrier orders the accesses of two
// blocks, as it orders their global memory accesses). The barrier comes whole
// (GRPO_CLUSTER_SYNC) or split: GRPO_CLUSTER_ARRIVE releases what the thread did before it and
// returns at once, GRPO_CLUSTER_WAIT returns once every non-exited thread of the cluster has
// arrived, so work that touches nothing the barrier guards can run between the two while the
// other blocks catch up. nvcc: cooperative groups; SIMT: the emulator runs a cluster's blocks
// phase by phase between these barriers (simt/scheduler.cpp), checks that every thread reaches
// the same one, and checks remote accesses like local ones (bounds, races; simt/sanitizer.cpp;
// an access between a thread's arrive and its wait is ordered for the others only by the next
// cluster barrier). It maps the dynamic arena only. Launch with grpo::launch_cluster
// (core/launch.h); clusters run along x.
#pragma once

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define GRPO_CLUSTER_SYNC() ::cooperative_groups::this_cluster().sync()
#define GRPO_CLUSTER_ARRIVE() ::cooperative_groups::this_cluster().barrier_arrive()
#define GRPO_CLUSTER_WAIT() ::cooperative_groups::this_cluster().barrier_wait()
namespace grpo {
__device__ __forceinline__ unsigned cluster_block_rank() { return ::cooperative_groups::this_cluster().block_rank(); }
__device__ __forceinline__ unsigned cluster_blocks() { return ::cooperative_groups::this_cluster().num_blocks(); }
template <class T>
__device__ __forceinline__ T* cluster_map_shared(T* p, unsigned rank) {
  return ::cooperative_groups::this_cluster().map_shared_rank(p, rank);
}
}  // namespace grpo
#else  // an older architecture in the build's list: no clusters; the host never launches one there
#define GRPO_CLUSTER_SYNC() __trap()
#define GRPO_CLUSTER_ARRIVE() __trap()
#define GRPO_CLUSTER_WAIT() __trap()
namespace grpo {
__device__ __forceinline__ unsigned cluster_block_rank() { return 0; }
__device__ __forceinline__ unsigned cluster_blocks() { return 1; }
template <class T>
__device__ __forceinline__ T* cluster_map_shared(T* p, unsigned) {
  return p;
}
}  // namespace grpo
#endif
#elif defined(GRPO_SIMT)
#define GRPO_CLUSTER_SYNC() ::simt::detail::cluster_sync(__FILE__, __LINE__)
#define GRPO_CLUSTER_ARRIVE() ::simt::detail::cluster_arrive(__FILE__, __LINE__)
#define GRPO_CLUSTER_WAIT() ::simt::detail::cluster_wait(__FILE__, __LINE__)
namespace grpo {
inline unsigned cluster_block_rank() { return blockIdx.x % ::simt::detail::cluster_size(); }
inline unsigned cluster_blocks() { return ::simt::detail::cluster_size(); }
template <class T>
T* cluster_map_shared(T* p, unsigned rank) {
  return static_cast<T*>(::simt::detail::map_shared_rank(p, rank));
}
}  // namespace grpo
#else
#error "core/cluster.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif
