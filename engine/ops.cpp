#include "engine/ops.h"

#include <stdexcept>

#include "engine/policy.h"
#include "kernels/policy_head.h"

namespace grpo {

Ops::RolloutStep rollout_step_at(const Ops::Rollout& r, int t) {
  const size_t row = size_t(t) * r.N;
  const bool last = t + 1 == r.T;
  const PolicyActs now = r.acts.rows_from(row, r.H);
  PolicyActs next = last ? now : r.acts.rows_from(row + r.N, r.H);
  if (!r.keep_h0) next.h0 = nullptr;
  return Ops::RolloutStep{r.p,
                          now,
                          next,
                          last ? nullptr : r.obs + (row + r.N) * r.D,
                          r.actions + row,
                          r.rewards + row,
                          r.games,
                          r.seed,
                          r.epoch,
                          r.dropout,
                          uint32_t(t),
                          r.N,
                          r.D,
                          r.H};
}

void Ops::rollout_start(const Rollout& r) {
  games_reset(r.games, r.seed, r.epoch, r.obs);
  policy_trunk_start(*this, r.p, r.obs, r.N, r.D, r.H, r.acts);
}

void Ops::rollout(const Rollout& r) {
  rollout_start(r);
  for (int t = 0; t < r.T; ++t) {
    const RolloutStep s = rollout_step_at(r, t);
    fc1_forward(*this, r.p, s.now, r.N, r.H);
    rollout_step(s);
  }
}

void Ops::rollout_step(const RolloutStep& s) {
  if (s.obs_next && s.next.h0 == nullptr)  // before any op has changed a thing
    throw std::logic_error("Ops::rollout_step: the composition needs next.h0 (Rollout::keep_h0)");
  const DropoutSpec drop{s.dropout, s.seed, Purpose::DropoutRollout, s.epoch, s.t};
  policy_head_forward(*this, s.p, s.N, s.H, s.now, drop);
  sample_actions(s.now.logits, s.N, s.seed, s.epoch, s.t, s.actions);
  games_step(s.games, s.actions, s.seed, s.epoch, s.t, s.rewards, s.obs_next);
  if (s.obs_next) policy_trunk_start(*this, s.p, s.obs_next, s.N, s.D, s.H, s.next);
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
  if (h.da1_bf16) cast_bf16(h.da1, h.da1_bf16, size_t(h.M) * h.H);
}

void Ops::loss_pass(const LossPass& l) {
  policy_head_loss(l.head);
  policy_trunk_backward(*this, l.p, l.g, l.X, l.head.da1, l.head.M, l.D, l.head.H, l.acts, l.trunk_work,
                        l.head.scratch);
}

void Ops::score_epoch(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n, float* best,
                      TrainScalars* best_scalars, float* scratch) {
  mean_i32(scores, N, &s->score, scratch);
  best_snapshot(s, slabs, n, best, best_scalars);
}

void Ops::end_epoch(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, float* scratch) {
  mean_f32(last_rewards, N, &s->reward, scratch);
  snapshot_metrics(s, ring);
  advance_schedule(s);
}

void Ops::layernorm_input_backward(const LayerNormInputBackward& a) {
  layernorm_residual_backward(a.ln);
  linear_backward_weight(a.ln.dh0, a.X, a.dW_in, a.ln.M, a.ln.N, a.D, false);
}

}  // namespace grpo
