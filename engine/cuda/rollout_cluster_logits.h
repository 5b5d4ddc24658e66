// The cluster rollout with one exchange a step (rollout_cluster_logits.cu), behind
// rollout_cluster_cuda's ClusterExchange::Logits (rollout_cluster.h, which says what it takes).
#pragma once
#include "engine/cuda/rollout_cluster.h"

namespace grpo {

// Whether N games at hidden H with observations of D floats take it: hidden 512, bf16 operands,
// the few-row product's shape, and ceil(N / 8) clusters of one game a block at once on the device.
bool rollout_cluster_logits_fits(int N, int H, int D, bool bf16);
// rollout_cluster_cuda's launch for it, after that function's checks (product on tensor cores;
// clocks of LogitsMark's marks).
// Throws std::invalid_argument where it does not fit.
void rollout_cluster_logits_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                                 const PhaseClocks& clocks, ClusterWait wait);

}  // namespace grpo
