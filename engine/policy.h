// The policy network's forward and backward passes over Ops (docs/spec/training.md):
//   h0 = X W_in^T ; h1 = h0 + LN(gelu(h0)) ; a1 = h1 W1^T ; h2 = dropout(gelu(a1 + b1)) ;
//   z = h2 W_out^T + b_out
// Used by the rollout (N rows per step) and the loss pass (M = T*N rows), and by the golden test.
// --precision bf16 (p.fc1_w_bf16 set, and a.h1_bf16 and a.da1_bf16 with it): fc1's three
// products take the bf16 copies of their operands, which their producers write: the CUDA
// kernels in place of the fp32 h1 and da1 (fc1's products are those arrays' only readers), the
// host twins beside them.
#pragma once
#include "engine/layout.h"
#include "engine/ops.h"

namespace grpo {

void policy_forward(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                    const PolicyActs& a, const DropoutSpec& drop);

// policy_forward in two halves split at the dropout, the only random op: the trunk (h0, h1,
// a1 and the LayerNorm statistics) is a deterministic function of X and the parameters; the
// head draws the mask and writes h2 and the logits from a1.
void policy_trunk_forward(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                          const PolicyActs& a);
// The trunk's first half (h0 and the LayerNorm: h1, mean, rstd), without the product with fc1:
// the part of a rollout step that follows the game (Ops::rollout_step).
void policy_trunk_start(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                        const PolicyActs& a);
// a1 = h1 W1^T: on the bf16 copies of h1 and W1 when p carries W1's (--precision bf16).
void fc1_forward(Ops& ops, const ParamViews& p, const PolicyActs& a, int rows, int hidden);
void policy_head_forward(Ops& ops, const ParamViews& p, int rows, int hidden, const PolicyActs& a,
                         const DropoutSpec& drop);

// Gradients of every parameter into g (overwritten, never accumulated) from dlogits = dL/dz.
// Needs the forward's activations and mask (same DropoutSpec). Reuses memory, so it clobbers
// a.a1 and a.h2; trunk_work is [rows, hidden] of scratch, scratch is the reductions' scratch.
void policy_backward(Ops& ops, const ParamViews& p, const ParamViews& g, const float* X, const float* dlogits, int rows,
                     int obs_dim, int hidden, const PolicyActs& a, const DropoutSpec& drop, float* trunk_work,
                     float* scratch);

// The backward below a1: from da1 = dL/da1 (bias included) to the gradients of fc1.weight,
// layer_norm and fc_in (overwritten). Clobbers a.a1 and trunk_work; da1 must be neither. Under
// --precision bf16 the fc1 products read a.da1_bf16, which must hold da1's copy.
void policy_trunk_backward(Ops& ops, const ParamViews& p, const ParamViews& g, const float* X, const float* da1,
                           int rows, int obs_dim, int hidden, const PolicyActs& a, float* trunk_work, float* scratch);

}  // namespace grpo
