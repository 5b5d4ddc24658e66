#include "core/grid_dependency.cuh"
#include "engine/metrics_ring.h"
#include "core/launch.h"

namespace grpo {

namespace {
// One thread: 64 bytes. The slot comes from the epoch in device memory, never from the host.
__global__ void snapshot_metrics_kernel(const TrainScalars* s, TrainScalars* ring) {
  follow_previous_kernel();
  ring[s->epoch % kMetricsRing] = *s;
}
}  // namespace

void snapshot_metrics_cuda(const TrainScalars* s, TrainScalars* ring, cudaStream_t stream) {
  launch_overlapped(snapshot_metrics_kernel, 1, 1, 0, stream, s, ring);
}

}  // namespace grpo
