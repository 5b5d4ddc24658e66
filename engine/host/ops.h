// Ops on the CPU: every op is its host twin (the reference the kernels are tested against).
#pragma once
#include <vector>

#include "engine/host/head_loss.h"
#include "engine/host/loss_pass.h"
#include "engine/host/rollout.h"
#include "engine/ops.h"
#include "cpu/gemm_packed.h"
#include "env/game_config.h"

namespace grpo {

class HostOps final : public Ops {
 public:
  HostOps(const GameConfig& game, int replicas) : game_(game), replicas_(replicas) {}

  void games_reset(const GamesView& g, uint64_t seed, const uint32_t* epoch, float* obs) override;
  void games_step(const GamesView& g, const int32_t* actions, uint64_t seed, const uint32_t* epoch, uint32_t t,
                  float* reward, float* obs_next) override;
  void linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) override;
  void linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) override;
  void linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K,
                              bool accumulate) override;
  void bias_grad(const float* dY, float* db, int M, int N, float* scratch) override;
  void fc_in_transpose(const float* W_in, float* W_inT, int N, int D) override;
  void cast_bf16(const float* x, Bf16* y, size_t n) override;
  void linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) override;
  void linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) override;
  void linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                   bool accumulate) override;
  // Packs W for linear_forward until adamw runs (the step calls it for fc1.weight before the
  // rollout's 200 products; cpu/gemm_packed.h).
  void weights_unchanged(const float* W, int N, int K) override;
  void layernorm_residual_forward(const LayerNormForward& a) override;
  void layernorm_residual_backward(const LayerNormBackward& a) override;
  // Fused: dh0 never written (kernels/layernorm.h, layernorm_input_backward_host).
  void layernorm_input_backward(const LayerNormInputBackward& a) override;
  void bias_gelu_dropout_forward(const float* a, const float* bias, float* out, int M, int N,
                                 const DropoutSpec& d) override;
  void bias_gelu_dropout_backward(const float* dout, const float* a, const float* bias, float* da, float* dbias, int M,
                                  int N, const DropoutSpec& d, float* scratch) override;
  void sample_actions(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                      int32_t* actions) override;
  void policy_loss(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                   float* dlogits, float* loss_out, float* entropy_out, float* scratch) override;
  void action_log_probs(const float* logits, const int32_t* actions, int M, float* logp) override;
  // Groups of games from the first step to the last, no barrier between steps (engine/host/rollout.h).
  // Under --precision bf16 (r.p.fc1_w_bf16 set) the default's ops in turn, as are the loss pass's.
  void rollout(const Rollout& r) override;
  // Fused: one pass over the rows instead of seven ops (engine/host/head_loss.h).
  void policy_head_loss(const HeadLoss& h) override;
  // Blocks of rows that stay in cache (engine/host/loss_pass.h).
  void loss_pass(const LossPass& l) override;
  void discounted_returns(const float* rewards, float* returns, int T, int N, float gamma) override;
  void normalize_advantages(const float* returns, float* adv, int count, float* scratch, float* stats_out) override;
  void group_normalize_rewards(const float* rewards, float* out, int T, int G, int R, float* stats_out) override;
  void grad_norm(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch) override;
  void adamw(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
             const AdamWConfig& cfg, const WeightCopies& copies) override;
  void finish_update(TrainScalars* s) override;
  void advance_schedule(TrainScalars* s) override;
  void mean_f32(const float* x, int n, float* out, float* scratch) override;
  void mean_i32(const int32_t* x, int n, float* out, float* scratch) override;
  void snapshot_metrics(const TrainScalars* s, TrainScalars* ring) override;
  void best_snapshot(const TrainScalars* s, const float* slabs, size_t n, float* best,
                     TrainScalars* best_scalars) override;
  void zero(void* p, size_t bytes) override;

 private:
  GameConfig game_;
  int replicas_;
  HeadLossScratch head_scratch_;
  LossPassScratch loss_scratch_;
  packed::PackedB fixed_fwd_;            // W^T of the weights_unchanged matrix
  std::vector<float> ln_input_partial_;  // grown on first use, then reused
};

}  // namespace grpo
