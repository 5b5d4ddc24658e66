// Kernels for the emulator's thread-block cluster tests (test_cluster.cpp): a correct exchange
// between the blocks of a cluster, and the misuses the emulator must report.
#include "core/cluster.cuh"
#include "core/launch.h"
#include "tests/simt/self_test_kernels.h"

namespace simt_test {
namespace {

// Each round: every block posts r * 100 + its rank in its cluster's slots, the cluster barrier,
// then reads its neighbour's post; a second barrier before the next round overwrites the slots.
// The block keeps its rank in a static __shared__ word across the barriers, which the other
// blocks of the cluster, run in between, write too.
__global__ void cluster_exchange_kernel(int* slots, int* out, int rounds, bool second_barrier) {
  __shared__ int my_rank;
  const unsigned C = grpo::cluster_blocks(), rank = grpo::cluster_block_rank(), first = blockIdx.x - rank;
  if (threadIdx.x == 0) my_rank = int(rank);
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) slots[first + rank] = r * 100 + my_rank;
    GRPO_CLUSTER_SYNC();
    if (threadIdx.x == 1) out[size_t(r) * gridDim.x + blockIdx.x] = slots[first + (rank + 1) % C] * 1000 + my_rank;
    if (second_barrier) GRPO_CLUSTER_SYNC();
  }
}

__global__ void cluster_two_places_kernel(int* out) {
  if (grpo::cluster_block_rank() == 0)
    GRPO_CLUSTER_SYNC();
  else
    GRPO_CLUSTER_SYNC();
  out[blockIdx.x] = 1;
}

__global__ void cluster_or_block_barrier_kernel(int* out) {
  if (threadIdx.x == 0)
    GRPO_CLUSTER_SYNC();
  else
    __syncthreads();
  out[blockIdx.x] = 1;
}

// Slot i of a block's arena holds the post of rank i of its cluster (C ints).
__global__ void cluster_dsmem_exchange_kernel(int* out, int rounds, bool second_barrier) {
  GRPO_DYNAMIC_SHARED(int, inbox);
  const unsigned C = grpo::cluster_blocks(), rank = grpo::cluster_block_rank();
  GRPO_CLUSTER_SYNC();  // every block of the cluster has started
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x < C) *grpo::cluster_map_shared(inbox + rank, threadIdx.x) = r * 100 + int(rank);
    GRPO_CLUSTER_SYNC();
    if (threadIdx.x == 1) out[size_t(r) * gridDim.x + blockIdx.x] = inbox[(rank + 1) % C] * 1000 + int(rank);
    if (second_barrier) GRPO_CLUSTER_SYNC();
  }
  if (!second_barrier) GRPO_CLUSTER_SYNC();
}

__global__ void cluster_dsmem_misuse_kernel(int* out, int what) {
  __shared__ int local;
  GRPO_DYNAMIC_SHARED(int, arena);  // 4 ints
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) local = 0, arena[0] = 0;
  if (what == 4 && threadIdx.x == 0 && rank == 0) *grpo::cluster_map_shared(arena + 1, 1u) = 7;
  if (what == 0 && rank == 1) return;  // exits without the barrier block 0 passes
  GRPO_CLUSTER_SYNC();
  if (what == 5 && rank == 1) return;  // exits in the phase in which block 0 writes into it
  if (threadIdx.x == 0 && rank == 0) {
    if (what == 0 || what == 5) *grpo::cluster_map_shared(arena, 1u) = 7;
    if (what == 1) grpo::cluster_map_shared(arena, 1u)[4] = 7;
    if (what == 2) *grpo::cluster_map_shared(&local, 1u) = 7;
    if (what == 3) *grpo::cluster_map_shared(arena, 2u) = 7;
  }
  GRPO_CLUSTER_SYNC();
  out[blockIdx.x] = 1;
}

}  // namespace

cudaError_t cluster_dsmem_exchange(int* out, int blocks, int cluster, int rounds, bool second_barrier) {
  return simt::launch_cluster(cluster_dsmem_exchange_kernel, dim3(blocks), dim3(64), size_t(cluster) * sizeof(int), 0,
                              unsigned(cluster), out, rounds, second_barrier);
}
cudaError_t cluster_dsmem_misuse(int* out, int what) {
  return simt::launch_cluster(cluster_dsmem_misuse_kernel, dim3(2), dim3(32), 4 * sizeof(int), 0, 2u, out, what);
}

cudaError_t cluster_exchange(int* slots, int* out, int blocks, int cluster, int rounds, bool second_barrier,
                             cudaStream_t s) {
  return simt::launch_cluster(cluster_exchange_kernel, dim3(blocks), dim3(64), 0, s, unsigned(cluster), slots, out,
                              rounds, second_barrier);
}
cudaError_t cluster_two_places(int* out) {
  return simt::launch_cluster(cluster_two_places_kernel, dim3(4), dim3(32), 0, 0, 2u, out);
}
cudaError_t cluster_or_block_barrier(int* out) {
  return simt::launch_cluster(cluster_or_block_barrier_kernel, dim3(2), dim3(32), 0, 0, 2u, out);
}

}  // namespace simt_test
