// The best-state snapshot (kernels/best_snapshot.h): a grid-stride copy of 3n floats that every
// thread skips when the epoch's score is no new best. The condition reads two scalars no kernel
// writes meanwhile, so every thread decides alike; the snapshot's scalars have one writer.
#include <algorithm>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/best_snapshot.h"

namespace grpo {

namespace {

constexpr unsigned kThreads = 256;

__global__ void best_snapshot_kernel(const TrainScalars* __restrict__ s, const float* __restrict__ slabs, size_t n,
                                     float* __restrict__ best, TrainScalars* __restrict__ best_scalars) {
  follow_previous_kernel();
  if (!is_new_best(*s)) return;
  const size_t stride = size_t(gridDim.x) * kThreads;
  for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < 3 * n; i += stride)
    best[i] = i < n ? slabs[i] : slabs[n + i];  // params, then m and v (slabs n + i for i >= n)
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    TrainScalars c = *s;
    c.best_score = s->score;
    *best_scalars = c;
  }
}

}  // namespace

void best_snapshot_cuda(const TrainScalars* s, const float* slabs, size_t n, float* best, TrainScalars* best_scalars,
                        cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = std::min<unsigned>(ceil_div(3 * n, kThreads), 1024u);
  launch_overlapped(best_snapshot_kernel, dim3(blocks), dim3(kThreads), 0, stream, s, slabs, n, best, best_scalars);
}

}  // namespace grpo
