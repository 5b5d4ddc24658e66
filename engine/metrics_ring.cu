#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "engine/metrics_ring.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {
// One thread: 64 bytes. The slot comes from the epoch in device memory, never from the host.
__global__ void snapshot_metrics_kernel(const TrainScalars* s, TrainScalars* ring) {
  follow_previous_kernel();
  ring[s->epoch % kMetricsRing] = *s;
}

// One block: the mean over its threads, then thread 0 alone writes the scalars (one writer).
__global__ void __launch_bounds__(kReduceThreads)
    end_epoch_kernel(const float* __restrict__ last_rewards, int n, TrainScalars* s, TrainScalars* ring) {
  follow_previous_kernel();
  const float reward = block_mean_two_stages<float>(last_rewards, n);
  if (threadIdx.x != 0) return;
  s->reward = reward;
  ring[s->epoch % kMetricsRing] = *s;
  advance_schedule_one(s);
}
}  // namespace

void snapshot_metrics_cuda(const TrainScalars* s, TrainScalars* ring, cudaStream_t stream) {
  launch_overlapped(snapshot_metrics_kernel, 1, 1, 0, stream, s, ring);
}

void end_epoch_cuda(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, cudaStream_t stream) {
  if (N < 1) throw std::invalid_argument("end_epoch_cuda: N must be >= 1, got " + std::to_string(N));
  launch_overlapped(end_epoch_kernel, 1, kReduceThreads, 0, stream, last_rewards, N, s, ring);
}

}  // namespace grpo
