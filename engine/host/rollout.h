// The host executor's rollout (Ops::rollout). Step by step, the rollout is ~7 small ops per step
// (136 rows at the small preset), each a parallel region or a serial stretch: 200 steps x 7
// hand-offs between the two threads and data crossing between their caches, for little work a
// step (fc_in, head, sampling, the game). But no game ever reads another game's
// rows, so here groups of games run from the first step to the last on whichever thread claims
// them, with no barrier in between. The groups depend on the shape alone and every op is
// row-wise, so the thread count never changes a bit. The price: the rollout uses at most as many
// threads as there are groups (two at the small preset, eight at the reference's 544 games).
#pragma once
#include "engine/ops.h"
#include "env/game_config.h"
#include "cpu/gemm_packed.h"

namespace grpo {

// fc1 (nullable): fc1.weight packed for the rollout's products (cpu/gemm_packed.h).
void rollout_host(const Ops::Rollout& r, const GameConfig& game, int replicas, const packed::PackedB* fc1);

}  // namespace grpo
