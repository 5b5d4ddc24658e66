// Host launchers for the self-test kernels (defined in the *.cu files beside this header).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace simt_test {
// Block sum of in[0..n) per block of `threads` threads; shared-memory tree with barriers.
// Threads with tid >= active exit before the first barrier.
cudaError_t block_sum(const float* in, float* out, int n, int threads, int active, cudaStream_t s = 0);
// The same reduction with the barrier inside the loop forgotten (planted bug).
cudaError_t block_sum_racy(const float* in, float* out, int n, int threads, cudaStream_t s = 0);
// One warp op per kernel; lanes of a block of `threads` threads, results per thread.
cudaError_t warp_shfl(const int* in, int* out, int threads, int src, int width);
cudaError_t warp_shfl_up(const int* in, int* out, int threads, int delta, int width);
cudaError_t warp_shfl_down(const float* in, float* out, int threads, int delta, int width);
cudaError_t warp_shfl_xor(const double* in, double* out, int threads, int mask, int width);
cudaError_t warp_votes(const int* pred, unsigned* ballot, int* any, int* all, int threads, unsigned mask);
// Misuse: the listed lanes call __shfl_sync with a full mask but lane `missing` returns early.
cudaError_t warp_missing_lane(int* out, int missing);
cudaError_t warp_own_lane_not_in_mask(int* out);
cudaError_t barrier_two_places(int* out);
// Atomics from many blocks: counts[i % bins] += 1 and max/min of the values, float sum.
cudaError_t atomics(const int* values, int n, int* counts, int bins, int* maxv, unsigned* minv, float* fsum,
                    unsigned long long* usum);
// out[i] = a * x[i] + b with a, b by value (graph capture tests).
cudaError_t axpb(const float* x, float* out, int n, float a, float b, cudaStream_t s);
// Three blocks take one off *count (>= 1): trips[count - 1] counts the blocks that saw each
// value, and the last block to arrive sets h to whether the count is still above zero.
cudaError_t countdown(unsigned* count, unsigned* arrived, unsigned* trips, cudaGraphConditionalHandle h,
                      cudaStream_t s);
// Dynamic shared memory: out[i] = 1 if the arena was poisoned (0xFF bytes) at block start.
cudaError_t smem_poison(int* out, int blocks, size_t smem_bytes);
// out[b] = 1 when block b found its static __shared__ bytes all 0xFF (64 threads per block).
cudaError_t static_smem_poison(int* out, int blocks);
// Each thread takes two tickets (atomicAdd on *counter) into first[t] and second[t].
cudaError_t tickets(unsigned* counter, unsigned* first, unsigned* second, int threads);
// Planted bug: ints + 1 threads each write an int of a dynamic arena of `ints` ints.
cudaError_t smem_past_end(int* out, int ints);
// Planted bug: __syncthreads in a loop of 1 + threadIdx.x % 3 trips (64 threads).
cudaError_t barrier_in_ragged_loop(float* out);
// Thread-block clusters (cluster_kernels.cu), `cluster` blocks each along x: `rounds` rounds in
// which every block posts r * 100 + its rank in slots[blocks], passes the cluster barrier and
// writes out[r * blocks + b] = (its neighbour's post) * 1000 + its rank, the neighbour being the
// next rank of its cluster, cyclically; with second_barrier false the next round's post races
// with the neighbour's read (planted bug). 64 threads per block.
cudaError_t cluster_exchange(int* slots, int* out, int blocks, int cluster, int rounds, bool second_barrier,
                             cudaStream_t s = 0);
// What out holds after an exchange (this one, or either of the two below) without a mistake.
inline std::vector<int> exchange_want(int blocks, int cluster, int rounds) {
  std::vector<int> want(size_t(rounds) * blocks);
  for (int r = 0; r < rounds; ++r)
    for (int b = 0; b < blocks; ++b) {
      const int rank = b % cluster;
      want[size_t(r) * blocks + b] = (r * 100 + (rank + 1) % cluster) * 1000 + rank;
    }
  return want;
}
// Misuse: rank 0 and the others reach the cluster barrier at two different places (4 blocks,
// clusters of 2); one thread of a block waits at the cluster barrier, the others at __syncthreads.
cudaError_t cluster_two_places(int* out);
cudaError_t cluster_or_block_barrier(int* out);
// Distributed shared memory (cluster_kernels.cu): the exchange above through each block's dynamic
// shared memory instead of global memory. Each round every block writes r * 100 + its rank into
// slot `rank` of every block of its cluster (grpo::cluster_map_shared), passes the cluster
// barrier, and writes out[r * blocks + b] = (slot of its next rank) * 1000 + its rank; with
// second_barrier false the next round's writes race with the reads (planted bug). A first
// barrier waits for every block to start, a last one keeps every block's arena until the others
// are done.
cudaError_t cluster_dsmem_exchange(int* out, int blocks, int cluster, int rounds, bool second_barrier);
// Misuses, clusters of 2: `what` 0: block 1 exits while block 0 writes its shared memory after a
// cluster barrier; 1: a write one int past block 1's arena; 2: mapping a static __shared__
// variable; 3: mapping to rank 2; 4: a write into block 1's arena before the first barrier; 5:
// block 1 exits after the first barrier while block 0 writes into its arena, no barrier between.
cudaError_t cluster_dsmem_misuse(int* out, int what);
// The split cluster barrier (cluster_split_kernels.cu): the distributed-shared-memory exchange
// above with each barrier split into GRPO_CLUSTER_ARRIVE and GRPO_CLUSTER_WAIT, out as there.
// Between round r's first two, each thread works on its own shared int and its word of scratch
// (scratch[64 b + tid] = 3 r + tid), and in round 0 thread 6 writes 1 to scratch[64 blocks + b].
// `mistake` adds: between an arrive and its wait, a post into the next reader's slot
// (kSplitLateRemotePost), or the read of the neighbour's post into out, instead of after the wait
// (kSplitGapReadsPost); thread 3's write of a static __shared__ word there that thread 4 copies
// to its scratch word after the wait (kSplitGapWriteThenRead), or the same with a __syncthreads
// of the whole block between (kSplitGapWriteSyncthreads: correct, the word is the last round);
// in round 0, thread 5 writing 2 to block b ^ 1's word of scratch[64 blocks ..] right after the
// wait that followed thread 6's write (kSplitGlobalOneBarrier: a race) or after the barrier
// after that one (kSplitGlobalTwoBarriers: correct). Clusters of an even size for these two.
enum SplitMistake {
  kSplitNone,
  kSplitLateRemotePost,
  kSplitGapReadsPost,
  kSplitGapWriteThenRead,
  kSplitGapWriteSyncthreads,
  kSplitGlobalOneBarrier,
  kSplitGlobalTwoBarriers
};
cudaError_t cluster_split_exchange(int* out, int* scratch, int blocks, int cluster, int rounds, int mistake);
// Misuses, clusters of 2: arrive twice, a wait without an arrive, the whole barrier between an
// arrive and its wait.
enum SplitMisuse { kSplitArriveTwice, kSplitWaitAlone, kSplitSyncInGap };
cudaError_t cluster_split_misuse(int* out, int what);
// The warp-level bf16 product (mma_kernels.cu, core/mma.cuh): `warps` warps of one block, warp w
// computing D = A B + C for its tile (A [16][16] at a + 256 w; B [8][16] at b + 128 w, column n's
// 16 k in a row; C and D [16][8] at c and d + 128 w). And a warp with one lane that skips it,
// and one whose two halves call it from two places.
cudaError_t mma_tiles(const uint16_t* a, const uint16_t* b, const float* c, float* d, int warps);
cudaError_t mma_one_lane_skips(float* d);
cudaError_t mma_two_sites(float* d);
}  // namespace simt_test
