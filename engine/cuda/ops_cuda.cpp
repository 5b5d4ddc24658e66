#include "engine/cuda/ops.h"

#include <nvtx3/nvToolsExt.h>

#include "engine/cuda/rollout_step.h"
#include "kernels/best_snapshot.h"
#include "kernels/fc_in.h"
#include "engine/metrics_ring.h"
#include "core/cuda_check.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/head_loss.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/policy_head.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"

namespace grpo {

void CudaOps::games_reset(const GamesView& g, uint64_t seed, const uint32_t* epoch, float* obs) {
  games_reset_cuda(game_, g, replicas_, seed, epoch, obs, stream_);
}
void CudaOps::games_step(const GamesView& g, const int32_t* actions, uint64_t seed, const uint32_t* epoch, uint32_t t,
                         float* reward, float* obs_next) {
  games_step_cuda(game_, g, actions, seed, epoch, t, reward, obs_next, stream_);
}
static_assert(1 + 3 * kMaxFruitSlots <= kLayerNormMaxObs, "every game's observation fits the fused input backward");
void CudaOps::layernorm_input_backward(const LayerNormInputBackward& a) {
  const LayerNormBackward& ln = a.ln;
  layernorm_input_backward_cuda(ln.dh1, ln.h0, a.X, a.W_in, ln.gamma, ln.mean, ln.rstd, ln.dgamma, ln.dbeta, a.dW_in,
                                ln.M, ln.N, a.D, ln.scratch, stream_);
}
void CudaOps::policy_head_loss(const HeadLoss& h) {
  head_loss_cuda(HeadLossArgs{h.a1, h.b1, h.w_out, h.b_out, h.actions, h.adv, h.M, h.H, h.objective, h.drop, h.logits,
                              h.dlogits, h.da1, h.g_b1, h.g_w_out, h.g_b_out, h.loss, h.scratch, h.da1_bf16},
                 stream_);
}
void CudaOps::cast_bf16(const float* x, Bf16* y, size_t n) { to_bf16_cuda(x, y, n, stream_); }
void CudaOps::linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) {
  linear_forward_bf16_cuda(blas_, X, W, b, Y, M, N, K, stream_);
}
void CudaOps::linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) {
  linear_backward_input_bf16_cuda(blas_, dY, W, dX, M, N, K, stream_);
}
void CudaOps::linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                          bool accumulate) {
  linear_backward_weight_bf16_cuda(blas_, dY, X, dW, M, N, K, accumulate, stream_);
}
void CudaOps::linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) {
  linear_forward_cuda(blas_, X, W, b, Y, M, N, K, stream_);
}
void CudaOps::linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) {
  linear_backward_input_cuda(blas_, dY, W, dX, M, N, K, stream_);
}
void CudaOps::linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate) {
  linear_backward_weight_cuda(blas_, dY, X, dW, M, N, K, accumulate, stream_);
}
void CudaOps::fc_in_forward(const float* X, const float* W_in, float* h0, int M, int N, int D) {
  fc_in_forward_cuda(X, W_in, h0, M, N, D, stream_);
}
void CudaOps::fc_in_transpose(const float* W_in, float* W_inT, int N, int D) {
  fc_in_transpose_cuda(W_in, W_inT, N, D, stream_);
}
void CudaOps::bias_grad(const float* dY, float* db, int M, int N, float* scratch) {
  bias_grad_cuda(dY, db, M, N, scratch, stream_);
}
void CudaOps::layernorm_residual_forward(const LayerNormForward& a) {
  layernorm_residual_forward_cuda(a.h0, a.gamma, a.beta, a.h1, a.mean, a.rstd, a.M, a.N, stream_, a.h1_bf16);
}
void CudaOps::layernorm_residual_backward(const LayerNormBackward& a) {
  layernorm_residual_backward_cuda(a.dh1, a.h0, a.gamma, a.mean, a.rstd, a.dh0, a.dgamma, a.dbeta, a.M, a.N, a.scratch,
                                   stream_);
}
void CudaOps::bias_gelu_dropout_forward(const float* a, const float* bias, float* out, int M, int N,
                                        const DropoutSpec& d) {
  bias_gelu_dropout_forward_cuda(a, bias, out, M, N, d, stream_);
}
void CudaOps::bias_gelu_dropout_backward(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                         int M, int N, const DropoutSpec& d, float* scratch) {
  bias_gelu_dropout_backward_cuda(dout, a, bias, da, dbias, M, N, d, scratch, stream_);
}
void CudaOps::sample_actions(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                             int32_t* actions) {
  sample_actions_cuda(logits, M, seed, epoch, step, actions, nullptr, stream_);
}
void CudaOps::policy_loss(const float* logits, const int32_t* actions, const float* adv, int M,
                          const PolicyObjective& obj, float* dlogits, float* loss_out, float* entropy_out,
                          float* scratch) {
  policy_loss_cuda(logits, actions, adv, M, obj, dlogits, loss_out, entropy_out, scratch, stream_);
}
void CudaOps::action_log_probs(const float* logits, const int32_t* actions, int M, float* logp) {
  action_log_probs_cuda(logits, actions, M, logp, stream_);
}
void CudaOps::discounted_returns(const float* rewards, float* returns, int T, int N, float gamma) {
  discounted_returns_cuda(rewards, returns, T, N, gamma, stream_);
}
void CudaOps::normalize_advantages(const float* returns, float* adv, int count, float* scratch, float* stats_out) {
  normalize_advantages_cuda(returns, adv, count, scratch, stats_out, stream_);
}
void CudaOps::group_normalize_rewards(const float* rewards, float* out, int T, int G, int R, float* stats_out) {
  group_normalize_rewards_cuda(rewards, out, T, G, R, stats_out, stream_);
}
void CudaOps::grad_norm(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch) {
  grad_norm_cuda(grads, n, s, max_norm, scratch, stream_);
}
void CudaOps::adamw(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                    const AdamWConfig& cfg, const WeightCopies& copies) {
  adamw_cuda(params, grads, m, v, n, s, cfg, stream_, copies);
}
void CudaOps::finish_update(TrainScalars* s) { finish_update_cuda(s, stream_); }
void CudaOps::rollout_start(const Rollout& r) {
  RolloutStep s = rollout_step_at(r, 0);
  s.next = s.now;  // step 0's own rows
  if (!r.keep_h0) s.next.h0 = nullptr;
  s.obs_next = r.obs;
  rollout_start_cuda(game_, s, replicas_, stream_);
}
void CudaOps::rollout_step(const RolloutStep& s) { rollout_step_cuda(game_, s, stream_, GameRange{}, step_clocks_); }
void CudaOps::advance_schedule(TrainScalars* s) { advance_schedule_cuda(s, stream_); }
void CudaOps::mean_f32(const float* x, int n, float* out, float* scratch) {
  mean_f32_cuda(x, n, out, scratch, stream_);
}
void CudaOps::mean_i32(const int32_t* x, int n, float* out, float* scratch) {
  mean_i32_cuda(x, n, out, scratch, stream_);
}
void CudaOps::snapshot_metrics(const TrainScalars* s, TrainScalars* ring) { snapshot_metrics_cuda(s, ring, stream_); }
void CudaOps::best_snapshot(const TrainScalars* s, const float* slabs, size_t n, float* best,
                            TrainScalars* best_scalars) {
  best_snapshot_cuda(s, slabs, n, best, best_scalars, stream_);
}
void CudaOps::score_epoch(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n, float* best,
                          TrainScalars* best_scalars, float*) {
  score_and_best_snapshot_cuda(scores, N, s, slabs, n, best, best_scalars, stream_);
}
void CudaOps::end_epoch(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, float*) {
  end_epoch_cuda(last_rewards, N, s, ring, stream_);
}
void CudaOps::zero(void* p, size_t bytes) { CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_)); }
void CudaOps::range_push(const char* name) {
  if (ranges_) nvtxRangePushA(name);
}
void CudaOps::range_pop() {
  if (ranges_) nvtxRangePop();
}

}  // namespace grpo
