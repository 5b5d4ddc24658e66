// Kernels for the emulator's split cluster barrier tests (test_cluster_split.cpp): an exchange
// whose work between arrive and wait touches nothing the barrier guards, and the mistakes the
// emulator must report there.
#include "core/cluster.cuh"
#include "core/launch.h"
#include "tests/simt/self_test_kernels.h"

namespace simt_test {
namespace {

// The arena: C ints of posts (slot i: rank i's), then one private int a thread. scratch: a word
// a thread, then a word a block (cross).
__global__ void cluster_split_exchange_kernel(int* out, int* scratch, int rounds, int mistake) {
  GRPO_DYNAMIC_SHARED(int, inbox);
  __shared__ int word;
  const unsigned C = grpo::cluster_blocks(), rank = grpo::cluster_block_rank(), tid = threadIdx.x;
  int* mine = inbox + C + tid;
  int* cross = scratch + size_t(gridDim.x) * blockDim.x;
  if (tid < C) inbox[tid] = -1;
  GRPO_CLUSTER_SYNC();  // every block of the cluster has started
  for (int r = 0; r < rounds; ++r) {
    if (tid < C) *grpo::cluster_map_shared(inbox + rank, tid) = r * 100 + int(rank);
    *mine = r;  // before the arrive, read back in the gap by the same thread
    GRPO_CLUSTER_ARRIVE();
    // The gap: the thread's own data, and whatever a mistake adds.
    *mine = *mine * 3 + int(tid);
    scratch[size_t(blockIdx.x) * blockDim.x + tid] = *mine;
    if (r == 0 && tid == 6) cross[blockIdx.x] = 1;
    // The thread that posted to the previous rank posts again: its reader is not ordered after it.
    if (mistake == kSplitLateRemotePost && tid == (rank + C - 1) % C)
      *grpo::cluster_map_shared(inbox + rank, tid) = r * 100 + int(rank);
    const bool word_case = mistake == kSplitGapWriteThenRead || mistake == kSplitGapWriteSyncthreads;
    if (word_case && tid == 3) word = r;
    if (mistake == kSplitGapWriteSyncthreads) __syncthreads();  // every thread of the block, in the gap
    if (mistake == kSplitGapReadsPost && tid == 1) out[size_t(r) * gridDim.x + blockIdx.x] = inbox[(rank + 1) % C];
    GRPO_CLUSTER_WAIT();
    if (word_case && tid == 4) scratch[size_t(blockIdx.x) * blockDim.x + tid] = word;
    if (mistake != kSplitGapReadsPost && tid == 1)
      out[size_t(r) * gridDim.x + blockIdx.x] = inbox[(rank + 1) % C] * 1000 + int(rank);
    // Block b ^ 1's word of cross, which its thread 6 wrote in the gap of the barrier just passed.
    if (mistake == kSplitGlobalOneBarrier && r == 0 && tid == 5) cross[blockIdx.x ^ 1u] = 2;
    // The second barrier, split with nothing between: the next round's posts wait for the reads.
    GRPO_CLUSTER_ARRIVE();
    GRPO_CLUSTER_WAIT();
    if (mistake == kSplitGlobalTwoBarriers && r == 0 && tid == 5) cross[blockIdx.x ^ 1u] = 2;
  }
  GRPO_CLUSTER_SYNC();  // every block's arena stays until the others are done with it
}

__global__ void cluster_split_misuse_kernel(int* out, int what) {
  if (what == kSplitArriveTwice) {
    GRPO_CLUSTER_ARRIVE();
    GRPO_CLUSTER_ARRIVE();
  } else if (what == kSplitWaitAlone) {
    GRPO_CLUSTER_WAIT();
  } else if (what == kSplitSyncInGap) {
    GRPO_CLUSTER_ARRIVE();
    GRPO_CLUSTER_SYNC();
  }
  out[blockIdx.x] = 1;
}

}  // namespace

cudaError_t cluster_split_exchange(int* out, int* scratch, int blocks, int cluster, int rounds, int mistake) {
  return simt::launch_cluster(cluster_split_exchange_kernel, dim3(blocks), dim3(64),
                              (size_t(cluster) + 64) * sizeof(int), 0, unsigned(cluster), out, scratch, rounds,
                              mistake);
}
cudaError_t cluster_split_misuse(int* out, int what) {
  return simt::launch_cluster(cluster_split_misuse_kernel, dim3(2), dim3(32), 0, 0, 2u, out, what);
}

}  // namespace simt_test
