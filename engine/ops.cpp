#include "engine/ops.h"

#include "engine/policy.h"
#include "kernels/policy_head.h"

namespace grpo {

void Ops::policy_head_loss(const HeadLoss& h) {
  bias_gelu_dropout_forward(h.a1, h.b1, h.h2, h.M, h.H, h.drop);
  linear_forward(h.h2, h.w_out, h.b_out, h.logits, h.M, kActions, h.H);
  policy_loss(h.logits, h.actions, h.adv, h.M, h.entropy_coef, h.dlogits, h.loss, nullptr, h.scratch);
  linear_backward_weight(h.dlogits, h.h2, h.g_w_out, h.M, kActions, h.H, false);
  bias_grad(h.dlogits, h.g_b_out, h.M, kActions, h.scratch);
  linear_backward_input(h.dlogits, h.w_out, h.dh2, h.M, kActions, h.H);
  // h2 is dead from here, so da1 may reuse it.
  bias_gelu_dropout_backward(h.dh2, h.a1, h.b1, h.da1, h.g_b1, h.M, h.H, h.drop, h.scratch);
}

void Ops::loss_pass(const LossPass& l) {
  policy_head_loss(l.head);
  policy_trunk_backward(*this, l.p, l.g, l.X, l.head.da1, l.head.M, l.D, l.head.H, l.acts, l.d_big, l.head.scratch);
}

void Ops::layernorm_input_backward(const float* dh1, const float* h0, const float* X, const float* gamma,
                                   const float* mean, const float* rstd, float* dh0, float* dgamma, float* dbeta,
                                   float* dW_in, int M, int N, int D, float* scratch) {
  layernorm_residual_backward(dh1, h0, gamma, mean, rstd, dh0, dgamma, dbeta, M, N, scratch);
  linear_backward_weight(dh0, X, dW_in, M, N, D, false);
}

}  // namespace grpo
