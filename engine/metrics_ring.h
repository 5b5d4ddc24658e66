// The per-epoch metrics leave the device through a small ring (docs/notes/cuda-graphs.md item 3): the
// captured step ends by copying its TrainScalars into slot epoch % kMetricsRing of a device ring
// (the slot index is computed on the device: the epoch is not a frozen argument), then one
// memcpy node copies the whole ring into pinned host memory. The host reads slot e after epoch
// e's event while e+1 runs; e+1 rewrites only slot e+1, so slot e stays intact for a few epochs.
#pragma once
#include "kernels/train_scalars.h"

namespace grpo {

constexpr int kMetricsRing = 4;

// ring[s->epoch % kMetricsRing] = *s.
void snapshot_metrics_host(const TrainScalars* s, TrainScalars* ring);
#if defined(GRPO_HAVE_CUDA)
void snapshot_metrics_cuda(const TrainScalars* s, TrainScalars* ring, cudaStream_t stream);
#endif

}  // namespace grpo
