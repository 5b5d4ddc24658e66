// The best-state snapshot (kernels/best_snapshot.h): a grid-stride copy of 3n floats that every
// thread skips when the epoch's score is no new best. The condition reads two scalars no kernel
// writes meanwhile, so every thread decides alike; the snapshot's scalars have one writer.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/best_snapshot.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {

constexpr unsigned kThreads = 256;

// Every block copies its share of the state when `score` is a new best; block 0's thread 0 also
// writes the snapshot's scalars, *s with score and best_score = score.
__device__ __forceinline__ void snapshot_if_best(float score, const TrainScalars* s, const float* slabs, size_t n,
                                                 float* best, TrainScalars* best_scalars) {
  if (!beats_best(score, s->best_score)) return;
  const size_t stride = size_t(gridDim.x) * kThreads;
  for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < 3 * n; i += stride)
    best[i] = i < n ? slabs[i] : slabs[n + i];  // params, then m and v (slabs n + i for i >= n)
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    TrainScalars c = *s;
    c.score = score;
    c.best_score = score;
    *best_scalars = c;
  }
}

__global__ void __launch_bounds__(kThreads)
    best_snapshot_kernel(const TrainScalars* __restrict__ s, const float* __restrict__ slabs, size_t n,
                         float* __restrict__ best, TrainScalars* __restrict__ best_scalars) {
  follow_previous_kernel();
  snapshot_if_best(s->score, s, slabs, n, best, best_scalars);
}

// Each block takes the mean itself (the same bits in every block), and block 0's thread 0 stores
// it; the other blocks read only s->best_score, which no kernel writes meanwhile.
__global__ void __launch_bounds__(kThreads)
    score_and_best_snapshot_kernel(const int32_t* __restrict__ scores, int N, TrainScalars* s,
                                   const float* __restrict__ slabs, size_t n, float* __restrict__ best,
                                   TrainScalars* __restrict__ best_scalars) {
  follow_previous_kernel();
  __shared__ float mean;
  const float score = block_mean_two_stages<long long>(scores, N);
  if (threadIdx.x == 0) {
    mean = score;
    if (blockIdx.x == 0) s->score = score;
  }
  __syncthreads();
  snapshot_if_best(mean, s, slabs, n, best, best_scalars);
}

unsigned snapshot_blocks(size_t n) { return std::min<unsigned>(ceil_div(3 * n, kThreads), 1024u); }

}  // namespace

void best_snapshot_cuda(const TrainScalars* s, const float* slabs, size_t n, float* best, TrainScalars* best_scalars,
                        cudaStream_t stream) {
  if (n == 0) return;
  launch_overlapped(best_snapshot_kernel, dim3(snapshot_blocks(n)), dim3(kThreads), 0, stream, s, slabs, n, best,
                    best_scalars);
}

void score_and_best_snapshot_cuda(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n,
                                  float* best, TrainScalars* best_scalars, cudaStream_t stream) {
  if (N < 1) throw std::invalid_argument("score_and_best_snapshot_cuda: N must be >= 1, got " + std::to_string(N));
  launch_overlapped(score_and_best_snapshot_kernel, dim3(std::max(snapshot_blocks(n), 1u)), dim3(kThreads), 0, stream,
                    scores, N, s, slabs, n, best, best_scalars);
}

}  // namespace grpo
