// Ops::rollout_step as one kernel (engine/ops.h has the contract; the default there, the ops in
// turn, is its host twin): one block per game runs the head, the sampling, the game and the next
// step's trunk up to fc1, so a rollout step is this kernel plus the product with fc1.
#pragma once
#include "engine/ops.h"
#include "env/game_config.h"

#if !defined(GRPO_HAVE_CUDA)
#error "engine/cuda/rollout_step.h needs the CUDA runtime (gpu or simt flavour)"
#endif
#include <cuda_runtime.h>

namespace grpo {

// Throws std::invalid_argument for a shape the kernel does not take (H outside the LayerNorm's
// 8..8192, D other than the game's, more than 32 observation floats).
void rollout_step_cuda(const GameConfig& game, const Ops::RolloutStep& s, cudaStream_t stream);

}  // namespace grpo
