#include "engine/ops.h"

#include "engine/policy.h"
#include "kernels/policy_head.h"

namespace grpo {

void Ops::rollout(const Rollout& r) {
  games_reset(r.games, r.seed, r.epoch, r.obs);
  for (int t = 0; t < r.T; ++t) {
    const size_t row = size_t(t) * r.N;
    const DropoutSpec drop{r.dropout, r.seed, Purpose::DropoutRollout, r.epoch, uint32_t(t)};
    const PolicyActs acts_t = r.acts.rows_from(row, r.H);
    policy_forward(*this, r.p, r.obs + row * r.D, r.N, r.D, r.H, acts_t, drop);
    int32_t* act_t = r.actions + row;
    sample_actions(acts_t.logits, r.N, r.seed, r.epoch, uint32_t(t), act_t);
    float* obs_next = t + 1 < r.T ? r.obs + (row + r.N) * r.D : nullptr;
    games_step(r.games, act_t, r.seed, r.epoch, uint32_t(t), r.rewards + row, obs_next);
  }
}

void Ops::policy_head_loss(const HeadLoss& h) {
  bias_gelu_dropout_forward(h.a1, h.b1, h.h2, h.M, h.H, h.drop);
  linear_forward(h.h2, h.w_out, h.b_out, h.logits, h.M, kActions, h.H);
  policy_loss(h.logits, h.actions, h.adv, h.M, h.objective, h.dlogits, h.loss, nullptr, h.scratch);
  linear_backward_weight(h.dlogits, h.h2, h.g_w_out, h.M, kActions, h.H, false);
  bias_grad(h.dlogits, h.g_b_out, h.M, kActions, h.scratch);
  linear_backward_input(h.dlogits, h.w_out, h.dh2, h.M, kActions, h.H);
  // h2 is dead from here, so da1 may reuse it.
  bias_gelu_dropout_backward(h.dh2, h.a1, h.b1, h.da1, h.g_b1, h.M, h.H, h.drop, h.scratch);
}

void Ops::loss_pass(const LossPass& l) {
  policy_head_loss(l.head);
  policy_trunk_backward(*this, l.p, l.g, l.X, l.head.da1, l.head.M, l.D, l.head.H, l.acts, l.trunk_work,
                        l.head.scratch);
}

void Ops::layernorm_input_backward(const LayerNormInputBackward& a) {
  layernorm_residual_backward(a.ln);
  linear_backward_weight(a.ln.dh0, a.X, a.dW_in, a.ln.M, a.ln.N, a.D, false);
}

}  // namespace grpo
