// The policy network's forward and backward passes over Ops (spec/training.md):
//   h0 = X W_in^T ; h1 = h0 + LN(gelu(h0)) ; a1 = h1 W1^T ; h2 = dropout(gelu(a1 + b1)) ;
//   z = h2 W_out^T + b_out
// Used by the rollout (N rows per step) and the loss pass (M = T*N rows), and by the golden test.
#pragma once
#include "engine/layout.h"
#include "engine/ops.h"

namespace grpo {

// Activations of `rows` rows, each [rows, hidden] except logits [rows, 3] and mean/rstd [rows].
struct PolicyActs {
  float *h0, *h1, *a1, *h2, *logits, *ln_mean, *ln_rstd;
};

void policy_forward(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                    const PolicyActs& a, const DropoutSpec& drop);

// Gradients of every parameter into g (overwritten, never accumulated) from dlogits = dL/dz.
// Needs the forward's activations and mask (same DropoutSpec). Reuses memory, so it clobbers
// a.a1 and a.h2; d_big is [rows, hidden] of scratch, scratch is the reductions' scratch.
void policy_backward(Ops& ops, const ParamViews& p, const ParamViews& g, const float* X, const float* dlogits,
                     int rows, int obs_dim, int hidden, const PolicyActs& a, const DropoutSpec& drop, float* d_big,
                     float* scratch);

}  // namespace grpo
