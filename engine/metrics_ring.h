// The per-epoch metrics leave the device through a small ring (docs/notes/cuda-graphs.md item 3): the
// captured step ends by copying its TrainScalars into slot epoch % kMetricsRing of a device ring
// (the slot index is computed on the device: the epoch is not a frozen argument), then one
// memcpy node copies the whole ring into pinned host memory. The host reads slot e after epoch
// e's event while e+1 runs; e+1 rewrites only slot e+1, so slot e stays intact for a few epochs.
#pragma once
#include "kernels/train_scalars.h"

namespace grpo {

constexpr int kMetricsRing = 4;
// The trainer has at most two epochs in flight (engine/trainer.cpp: epoch e + 1 is launched
// before epoch e's wait). While the host copies slot e out of pinned memory, epoch e + 1's copy
// of the whole ring rewrites that slot with the bytes it already holds, as long as the ring has
// more slots than epochs in flight.
constexpr int kEpochsInFlight = 2;
static_assert(kMetricsRing > kEpochsInFlight, "a slot the host reads must not be the device's to write");

// ring[s->epoch % kMetricsRing] = *s.
void snapshot_metrics_host(const TrainScalars* s, TrainScalars* ring);
#if defined(GRPO_HAVE_CUDA)
void snapshot_metrics_cuda(const TrainScalars* s, TrainScalars* ring, cudaStream_t stream);
// The epoch's last kernel: s->reward = mean_f32 of last_rewards[0..N) (N >= 1; added in
// mean_f32_cuda's order, kernels/reduce.h, so the same bits), the snapshot above, then
// advance_schedule (kernels/train_scalars.h). One kernel where those are four.
void end_epoch_cuda(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, cudaStream_t stream);
#endif

}  // namespace grpo
