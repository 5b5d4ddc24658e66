#include "engine/host/ops.h"
#include "kernels/best_snapshot.h"

#include <cstring>

#include "engine/metrics_ring.h"
#include "kernels/fc_in.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/policy_head.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"

namespace grpo {

void HostOps::games_reset(const GamesView& g, uint64_t seed, const uint32_t* epoch, float* obs) {
  games_reset_host(game_, g, replicas_, seed, epoch, obs);
}
void HostOps::games_step(const GamesView& g, const int32_t* actions, uint64_t seed, const uint32_t* epoch, uint32_t t,
                         float* reward, float* obs_next) {
  games_step_host(game_, g, actions, seed, epoch, t, reward, obs_next);
}
void HostOps::linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) {
  const packed::PackedB& p = fixed_fwd_;
  if (p.source == W && p.cols == N && p.inner == K && packed::gemm(X, M, p, b, Y)) return;
  linear_forward_host(X, W, b, Y, M, N, K);
}
void HostOps::cast_bf16(const float* x, Bf16* y, size_t n) { to_bf16_host(x, y, n); }
void HostOps::linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) {
  linear_forward_bf16_host(X, W, b, Y, M, N, K);
}
void HostOps::linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) {
  linear_backward_input_bf16_host(dY, W, dX, M, N, K);
}
void HostOps::linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                          bool accumulate) {
  linear_backward_weight_bf16_host(dY, X, dW, M, N, K, accumulate);
}
void HostOps::linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) {
  linear_backward_input_host(dY, W, dX, M, N, K);
}
void HostOps::weights_unchanged(const float* W, int N, int K) { packed::pack_transposed(W, N, K, fixed_fwd_); }
void HostOps::linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate) {
  linear_backward_weight_host(dY, X, dW, M, N, K, accumulate);
}
void HostOps::fc_in_transpose(const float* W_in, float* W_inT, int N, int D) {
  fc_in_transpose_host(W_in, W_inT, N, D);
}
void HostOps::bias_grad(const float* dY, float* db, int M, int N, float* scratch) {
  bias_grad_host(dY, db, M, N, scratch);
}
void HostOps::layernorm_residual_forward(const LayerNormForward& a) {
  layernorm_residual_forward_host(a.h0, a.gamma, a.beta, a.h1, a.mean, a.rstd, a.M, a.N);
  if (a.h1_bf16) to_bf16_host(a.h1, a.h1_bf16, size_t(a.M) * a.N);
}
void HostOps::layernorm_residual_backward(const LayerNormBackward& a) {
  layernorm_residual_backward_host(a.dh1, a.h0, a.gamma, a.mean, a.rstd, a.dh0, a.dgamma, a.dbeta, a.M, a.N, a.scratch);
}
void HostOps::layernorm_input_backward(const LayerNormInputBackward& a) {
  const LayerNormBackward& ln = a.ln;
  const size_t need = layernorm_input_backward_partial_floats(ln.M, ln.N, a.D);
  if (ln_input_partial_.size() < need) ln_input_partial_.resize(need);
  layernorm_input_backward_host(ln.dh1, ln.h0, a.X, ln.gamma, ln.mean, ln.rstd, ln.dgamma, ln.dbeta, a.dW_in, ln.M,
                                ln.N, a.D, ln_input_partial_.data());
}
void HostOps::bias_gelu_dropout_forward(const float* a, const float* bias, float* out, int M, int N,
                                        const DropoutSpec& d) {
  bias_gelu_dropout_forward_host(a, bias, out, M, N, d);
}
void HostOps::bias_gelu_dropout_backward(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                         int M, int N, const DropoutSpec& d, float* scratch) {
  bias_gelu_dropout_backward_host(dout, a, bias, da, dbias, M, N, d, scratch);
}
void HostOps::sample_actions(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                             int32_t* actions) {
  sample_actions_host(logits, M, seed, epoch, step, actions, nullptr);
}
void HostOps::policy_loss(const float* logits, const int32_t* actions, const float* adv, int M,
                          const PolicyObjective& obj, float* dlogits, float* loss_out, float* entropy_out,
                          float* scratch) {
  policy_loss_host(logits, actions, adv, M, obj, dlogits, loss_out, entropy_out, scratch);
}
void HostOps::action_log_probs(const float* logits, const int32_t* actions, int M, float* logp) {
  action_log_probs_host(logits, actions, M, logp);
}
void HostOps::policy_head_loss(const HeadLoss& h) {
  policy_head_loss_host(h, head_scratch_);
  if (h.da1_bf16) to_bf16_host(h.da1, h.da1_bf16, size_t(h.M) * h.H);
}
// The fused host passes are fp32 only; --precision bf16 runs the defaults' twins in turn.
void HostOps::rollout(const Rollout& r) {
  if (r.p.fc1_w_bf16) return Ops::rollout(r);
  rollout_host(r, game_, replicas_, &fixed_fwd_);
}
void HostOps::loss_pass(const LossPass& l) {
  if (l.p.fc1_w_bf16) return Ops::loss_pass(l);
  loss_pass_host(l, loss_scratch_);
}
void HostOps::discounted_returns(const float* rewards, float* returns, int T, int N, float gamma) {
  discounted_returns_host(rewards, returns, T, N, gamma);
}
void HostOps::normalize_advantages(const float* returns, float* adv, int count, float* scratch, float* stats_out) {
  normalize_advantages_host(returns, adv, count, scratch, stats_out);
}
void HostOps::group_normalize_rewards(const float* rewards, float* out, int T, int G, int R, float* stats_out) {
  group_normalize_rewards_host(rewards, out, T, G, R, stats_out);
}
void HostOps::grad_norm(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch) {
  grad_norm_host(grads, n, s, max_norm, scratch);
}
void HostOps::adamw(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                    const AdamWConfig& cfg, const WeightCopies& copies) {
  fixed_fwd_.source = nullptr;  // the packed copy is stale from here
  adamw_host(params, grads, m, v, n, s, cfg, copies);
}
void HostOps::finish_update(TrainScalars* s) { finish_update_host(s); }
void HostOps::advance_schedule(TrainScalars* s) { advance_schedule_host(s); }
void HostOps::mean_f32(const float* x, int n, float* out, float* scratch) { mean_f32_host(x, n, out, scratch); }
void HostOps::mean_i32(const int32_t* x, int n, float* out, float* scratch) { mean_i32_host(x, n, out, scratch); }
void HostOps::snapshot_metrics(const TrainScalars* s, TrainScalars* ring) { snapshot_metrics_host(s, ring); }
void HostOps::best_snapshot(const TrainScalars* s, const float* slabs, size_t n, float* best,
                            TrainScalars* best_scalars) {
  best_snapshot_host(s, slabs, n, best, best_scalars);
}
void HostOps::zero(void* p, size_t bytes) { std::memset(p, 0, bytes); }

}  // namespace grpo
