#include "engine/policy.h"

namespace grpo {

void policy_trunk_start(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                        const PolicyActs& a) {
  ops.fc_in_forward(X, p.fc_in_w, a.h0, rows, hidden, obs_dim);
  ops.layernorm_residual_forward({a.h0, p.ln_gamma, p.ln_beta, a.h1, a.ln_mean, a.ln_rstd, rows, hidden, a.h1_bf16});
}

void fc1_forward(Ops& ops, const ParamViews& p, const PolicyActs& a, int rows, int hidden) {
  if (p.fc1_w_bf16)
    ops.linear_forward_bf16(a.h1_bf16, p.fc1_w_bf16, nullptr, a.a1, rows, hidden, hidden);
  else
    ops.linear_forward(a.h1, p.fc1_w, nullptr, a.a1, rows, hidden, hidden);
}

void policy_trunk_forward(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                          const PolicyActs& a) {
  policy_trunk_start(ops, p, X, rows, obs_dim, hidden, a);
  fc1_forward(ops, p, a, rows, hidden);
}

void policy_head_forward(Ops& ops, const ParamViews& p, int rows, int hidden, const PolicyActs& a,
                         const DropoutSpec& drop) {
  ops.bias_gelu_dropout_forward(a.a1, p.fc1_b, a.h2, rows, hidden, drop);
  ops.linear_forward(a.h2, p.fc_out_w, p.fc_out_b, a.logits, rows, kActions, hidden);
}

void policy_forward(Ops& ops, const ParamViews& p, const float* X, int rows, int obs_dim, int hidden,
                    const PolicyActs& a, const DropoutSpec& drop) {
  policy_trunk_forward(ops, p, X, rows, obs_dim, hidden, a);
  policy_head_forward(ops, p, rows, hidden, a, drop);
}

void policy_backward(Ops& ops, const ParamViews& p, const ParamViews& g, const float* X, const float* dlogits, int rows,
                     int obs_dim, int hidden, const PolicyActs& a, const DropoutSpec& drop, float* trunk_work,
                     float* scratch) {
  // Buffers are recycled as soon as they die, so the loss pass needs five [rows, hidden] arrays:
  // dh2 -> trunk_work; da1 -> h2 (dead after dW_out); then policy_trunk_backward's reuse.
  float* dh2 = trunk_work;
  float* da1 = a.h2;
  ops.linear_backward_weight(dlogits, a.h2, g.fc_out_w, rows, kActions, hidden, false);
  ops.bias_grad(dlogits, g.fc_out_b, rows, kActions, scratch);
  ops.linear_backward_input(dlogits, p.fc_out_w, dh2, rows, kActions, hidden);
  ops.bias_gelu_dropout_backward(dh2, a.a1, p.fc1_b, da1, g.fc1_b, rows, hidden, drop, scratch);
  if (a.da1_bf16) ops.cast_bf16(da1, a.da1_bf16, size_t(rows) * hidden);
  policy_trunk_backward(ops, p, g, X, da1, rows, obs_dim, hidden, a, trunk_work, scratch);
}

void policy_trunk_backward(Ops& ops, const ParamViews& p, const ParamViews& g, const float* X, const float* da1,
                           int rows, int obs_dim, int hidden, const PolicyActs& a, float* trunk_work, float* scratch) {
  // dh1 -> a1 (dead once da1 exists); dh0 -> trunk_work. No op ever reads and writes the same buffer.
  float* dh1 = a.a1;
  float* dh0 = trunk_work;
  if (p.fc1_w_bf16) {  // --precision bf16: da1's copy was written by da1's producer
    ops.linear_backward_weight_bf16(a.da1_bf16, a.h1_bf16, g.fc1_w, rows, hidden, hidden, false);
    ops.linear_backward_input_bf16(a.da1_bf16, p.fc1_w_bf16, dh1, rows, hidden, hidden);
  } else {
    ops.linear_backward_weight(da1, a.h1, g.fc1_w, rows, hidden, hidden, false);
    ops.linear_backward_input(da1, p.fc1_w, dh1, rows, hidden, hidden);
  }
  Ops::LayerNormBackward ln{dh1,        a.h0,      p.ln_gamma, a.ln_mean, a.ln_rstd, dh0,
                            g.ln_gamma, g.ln_beta, scratch,    rows,      hidden};
  ops.layernorm_input_backward({ln, X, p.fc_in_w, g.fc_in_w, obs_dim});
}

}  // namespace grpo
