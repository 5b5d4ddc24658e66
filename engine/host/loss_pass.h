// The host executor's loss pass (Ops::loss_pass) in blocks of rows. Over all M rows at once,
// every op streams [M, H] arrays through DRAM (at the small preset 55 MB each): the head writes
// da1, the two fc1 products read it again, the input product writes dh1 and the LayerNorm
// backward reads it back. Block by block, da1 and dh1 exist only for the block in hand and stay
// in cache; only a1, h1 and h0 are read from memory, once. Each block's parameter gradients are
// added into totals in block order (fc1.weight by the product itself, beta = 1), so the result
// depends on the shape alone, never on the thread count.
#pragma once
#include <vector>

#include "engine/host/head_loss.h"
#include "engine/ops.h"

namespace grpo {

// Buffers the blocked pass reuses from epoch to epoch (grown on first use).
struct LossPassScratch {
  HeadLossScratch head;
  std::vector<float> da1, dh1, ln_partial, block_grads;
  std::vector<double> totals;
};

void loss_pass_host(const Ops::LossPass& l, LossPassScratch& scratch);

}  // namespace grpo
