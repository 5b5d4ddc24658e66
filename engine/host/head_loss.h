// The host executor's loss-pass head (Ops::policy_head_loss) fused into one pass over the rows.
// Composed of the seven ops, the head costs the host two tanh passes and two Philox mask draws
// per activation and four sweeps of [M, H] arrays through memory (h2 and dh2 written and read
// back); fused, each row is handled while it sits in L1: one tanh, one mask draw, a1 read once
// and da1 written once. Results differ from the composition only in the summation order of
// the three logits and of the column sums (tests/engine/test_head_loss.cpp bounds the gap).
#pragma once
#include <vector>

#include "engine/ops.h"

namespace grpo {

// Per fixed row chunk (activations_colsum.h) partial sums of g_b1, g_w_out, g_b_out in floats
// and of the loss in double; grown on first use, then reused (no allocation per epoch).
struct HeadLossScratch {
  std::vector<float> partial;
  std::vector<double> loss;
};

// h.h2 and h.dh2 are not touched. Deterministic: rows are split into chunks by the shape alone
// and chunk sums are added in chunk order, so the thread count never changes a bit.
// A block of a larger loss pass (engine/host/loss_pass.cpp): its rows are rows row0.. of the
// pass (their dropout counters), its per-sample gradients carry 1 / mean_rows, and its sum of
// per-sample losses goes to *loss_sum instead of the mean to *h.loss.
struct HeadBlock {
  int row0 = 0;
  int mean_rows = 0;  // 0: h.M
  double* loss_sum = nullptr;
};
void policy_head_loss_host(const Ops::HeadLoss& h, HeadLossScratch& scratch, const HeadBlock& block = {});

}  // namespace grpo
