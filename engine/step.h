// One epoch = one training step (docs/spec/training.md "One epoch"), written once over Ops. The CUDA
// executor runs it eagerly or captures it into the epoch's graph; the host executor runs it on
// the CPU. Nothing in here allocates, synchronises or reads a device value on the host.
#pragma once
#include <cstdint>

#include "engine/layout.h"
#include "engine/ops.h"
#include "engine/policy.h"

namespace grpo {

// Typed views of the parameter slabs and the arena, in the executor's memory.
struct StepBuffers {
  ParamViews p, g;
  float *params, *grads, *adam_m, *adam_v;
  size_t n_params;  // floats per slab, padding included (padding stays zero)
  float* obs;       // [T*N, D], row t*N + game
  int32_t* actions;
  float *rewards, *returns, *advantages, *adv_stats;
  float* old_logp;  // [M], --algo grpo only (nullptr otherwise)
  PolicyActs acts;  // [M, hidden]; rollout step t writes rows t*N.., which the loss pass reuses
  float *trunk_work, *dlogits, *scratch;
  GamesView games;
  TrainScalars* scalars;
  TrainScalars* ring;  // kMetricsRing snapshots
  float* best;         // the best epoch's params, m, v (kernels/best_snapshot.h)
  TrainScalars* best_scalars;

  // slabs: 4 consecutive slabs (params, grads, m, v) of ParamLayout::total floats each.
  static StepBuffers over(float* slabs, void* arena, const TrainConfig& c);
};

void training_step(Ops& ops, const StepBuffers& b, const TrainConfig& c);

// The copies of fc1.weight and fc_in.weight that products and the rollout read, from the
// parameters: the executors call it whenever they set the state (an update writes the copies of
// what it moves itself: kernels/adamw.h's WeightCopies); a caller that runs Ops::rollout itself
// (benchmarks, tests) calls it first.
void refresh_weight_copies(Ops& ops, const ParamViews& p, int H, int D);

}  // namespace grpo
