// The operations one training step is made of (docs/design.md principle 2). The step (step.cpp) is
// written once against this interface; HostOps runs each op as plain C++ (the reference), CudaOps
// launches the kernels on one stream, eagerly or under capture into the epoch's CUDA graph.
// Every pointer lives in the executor's memory (host or device). Values that change from epoch to
// epoch are read through pointers (TrainScalars); by-value arguments are constant for a run.
#pragma once
#include <cstdint>

#include "engine/layout.h"
#include "env/games.h"
#include "kernels/adamw.h"
#include "kernels/bf16.h"
#include "kernels/dropout.h"
#include "kernels/policy_head.h"
#include "kernels/train_scalars.h"

namespace grpo {

class Ops {
 public:
  virtual ~Ops() = default;

  // The game (env/games.h); the executor knows the game config and the replicas per group.
  virtual void games_reset(const GamesView& g, uint64_t seed, const uint32_t* epoch, float* obs) = 0;
  virtual void games_step(const GamesView& g, const int32_t* actions, uint64_t seed, const uint32_t* epoch, uint32_t t,
                          float* reward, float* obs_next) = 0;

  // Row-major products with PyTorch [out, in] weights (kernels/matmul.h):
  // Y[M,N] = X[M,K] W[N,K]^T (+ b), dX[M,K] = dY[M,N] W[N,K], dW[N,K] = dY^T X (accumulate: +=).
  virtual void linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) = 0;
  virtual void linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) = 0;
  virtual void linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K,
                                      bool accumulate) = 0;
  virtual void bias_grad(const float* dY, float* db, int M, int N, float* scratch) = 0;
  // fc_in: h0[M, N] = X[M, D] W_in[N, D]^T, no bias. The default is linear_forward; CudaOps runs
  // kernels/fc_in.h's fixed order, the one its rollout step and LayerNorm input backward use.
  virtual void fc_in_forward(const float* X, const float* W_in, float* h0, int M, int N, int D) {
    linear_forward(X, W_in, nullptr, h0, M, N, D);
  }
  // W_inT = fc_in.weight [N, D] transposed, rows padded to 4 (kernels/fc_in.h): the layout the
  // CUDA rollout step reads.
  virtual void fc_in_transpose(const float* W_in, float* W_inT, int N, int D) = 0;
  // --precision bf16 (kernels/bf16.h): y = x rounded to bf16, and the three products on bf16
  // operands with fp32 sums and outputs. The step takes them for fc1 when the parameter views
  // carry fc1.weight's bf16 copy (engine/policy.h, fc1_forward).
  virtual void cast_bf16(const float* x, Bf16* y, size_t n) = 0;
  virtual void linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) = 0;
  virtual void linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) = 0;
  virtual void linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                           bool accumulate) = 0;
  // A hint: W [N, K] will not change until the next adamw or weights_unchanged call, so an executor
  // may keep a packed copy for the linear_forward calls that read it (HostOps does:
  // cpu/gemm_packed.h). The default ignores it.
  virtual void weights_unchanged(const float* /*W*/, int /*N*/, int /*K*/) {}

  // h1 = h0 + LayerNorm(gelu(h0)) and its backward (kernels/layernorm.h), over M rows of N.
  struct LayerNormForward {
    const float *h0, *gamma, *beta;  // [M, N], [N], [N]
    float *h1, *mean, *rstd;         // [M, N], [M], [M]: written
    int M, N;
    // [M, N], or nullptr: h1 rounded to bf16 (--precision bf16). Given it, an executor may
    // leave h1 unwritten (CudaOps does: under bf16 only the copy is read).
    Bf16* h1_bf16 = nullptr;
  };
  struct LayerNormBackward {
    const float *dh1, *h0, *gamma, *mean, *rstd;  // the forward's inputs and statistics
    float *dh0, *dgamma, *dbeta;                  // [M, N], [N], [N]: overwritten
    float* scratch;
    int M, N;
  };
  virtual void layernorm_residual_forward(const LayerNormForward& a) = 0;
  virtual void layernorm_residual_backward(const LayerNormBackward& a) = 0;

  // The trunk's first layer backward as one op, so that an executor may fuse it: the backward
  // above from dh1, then dW_in[N, D] = dh0^T X (overwritten). ln.dh0 is an [M, N] work array. The
  // default (ops.cpp) runs the two ops; HostOps and CudaOps never write dh0 (kernels/layernorm.h).
  struct LayerNormInputBackward {
    LayerNormBackward ln;
    const float* X;     // [M, D]: fc_in's input
    const float* W_in;  // [N, D]: fc_in's weights (h0 = X W_in^T), for an executor that recomputes h0
    float* dW_in;       // [N, D]
    int D;
  };
  virtual void layernorm_input_backward(const LayerNormInputBackward& a);

  // out = dropout(gelu(a + bias)) and its backward (kernels/gelu.h, kernels/dropout.h).
  virtual void bias_gelu_dropout_forward(const float* a, const float* bias, float* out, int M, int N,
                                         const DropoutSpec& d) = 0;
  virtual void bias_gelu_dropout_backward(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                          int M, int N, const DropoutSpec& d, float* scratch) = 0;

  // Policy head (kernels/policy_head.h).
  virtual void sample_actions(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                              int32_t* actions) = 0;
  virtual void policy_loss(const float* logits, const int32_t* actions, const float* adv, int M,
                           const PolicyObjective& obj, float* dlogits, float* loss_out, float* entropy_out,
                           float* scratch) = 0;
  virtual void action_log_probs(const float* logits, const int32_t* actions, int M, float* logp) = 0;

  // The rollout (spec steps 1-2) as one op: games_reset and the trunk up to fc1 of step 0, then
  // T steps of the product with fc1.weight and rollout_step. Step t writes its activations into
  // rows t*N.. of acts (the loss pass reuses the trunk's), its actions, rewards and next
  // observations into rows t*N... The default (ops.cpp) is that step-by-step loop: two CUDA
  // nodes a step when rollout_step is one kernel. Under capture, CudaOps puts every step but the
  // last into one WHILE node when the product takes the few-row kernel
  // (engine/cuda/rollout_loop_cuda.cpp). No game reads another's
  // rows, so HostOps runs fixed groups of games from the first step to the last on the pool's
  // threads, with no barrier between steps (engine/host/rollout.cpp).
  struct Rollout {
    ParamViews p;
    PolicyActs acts;   // [M, H] (M = T N)
    float* obs;        // [M, D]: obs row t*N + g
    int32_t* actions;  // [M]
    float* rewards;    // [M]
    GamesView games;
    uint64_t seed;
    const uint32_t* epoch;
    float dropout;
    int T, N, D, H;
    // Whether the steps write their h0 rows (rollout_start's default writes step 0's either
    // way): false only where loss_pass_reads_h0 said so, and only an executor whose own
    // rollout_step and rollout_start honour a null h0 may say so.
    bool keep_h0 = true;
  };
  virtual void rollout(const Rollout& r);
  // The rollout's start (spec step 1 and step 0's trunk up to fc1): games_reset, then
  // policy_trunk_start on step 0's observations into step 0's rows (h0 there only with keep_h0).
  // One op so that an executor may run it as one kernel (CudaOps); the default (ops.cpp) runs the
  // two in turn, writing h0 either way.
  virtual void rollout_start(const Rollout& r);
  // Whether this executor's loss pass reads the rollout's h0 rows (N columns, observations of D):
  // CudaOps recomputes h0 where layernorm_input_backward_recomputes_h0 (kernels/layernorm.h).
  virtual bool loss_pass_reads_h0(int /*N*/, int /*D*/) const { return true; }

  // Everything row-local from one rollout step's product with fc1 to the next one's (spec steps
  // 1-2), for the N games of step t:
  //   h2 = dropout(gelu(a1 + b1)) (purpose DropoutRollout, step t, row = game);
  //   logits = h2 W_out^T + b_out; the action sampled from them (sample_actions);
  //   the game stepped with it (games_step: reward, state, next observation);
  //   and unless t is the last step, the next step's trunk up to fc1: h0 = obs_next W_in^T and
  //   its LayerNorm with the residual (h1, mean, rstd).
  // h2 is not part of the result (the loss pass draws its own mask and recomputes it): the
  // default (ops.cpp, those ops in turn) uses now.h2 as work space, a fused kernel never
  // writes it. The CUDA executor runs it as one kernel (engine/cuda/rollout_step.cu), whose
  // sums and LayerNorm merge run in their own order: its rows equal the separate ops' within
  // the fp32 tolerances, not bit for bit, and its fc_in and fc_out stay fp32 under --tf32.
  // Under --precision bf16 (next.h1_bf16 set) it writes the next h1's bf16 copy, and may leave
  // next.h1 unwritten, as the LayerNorm forward may.
  struct RolloutStep {
    ParamViews p;
    PolicyActs now;    // rows of step t: a1 read, logits written, h2 work space
    PolicyActs next;   // rows of step t + 1: h0, h1, ln_mean, ln_rstd written (unused when last)
    float* obs_next;   // [N, D] written; nullptr at the last step
    int32_t* actions;  // [N] of step t
    float* rewards;    // [N] of step t
    GamesView games;
    uint64_t seed;
    const uint32_t* epoch;
    float dropout;
    uint32_t t;
    int N, D, H;
  };
  virtual void rollout_step(const RolloutStep& s);

  // The loss pass's head as one op, so that an executor may fuse it (spec steps 5-6 above the
  // trunk): h2 = dropout(gelu(a1 + b1)) with mask `drop`, logits = h2 W_out^T + b_out, the loss
  // and dlogits of policy_loss, then the head's backward: g_w_out, g_b_out, g_b1 (overwritten)
  // and da1 = dL/da1 (when da1_bf16 is set, --precision bf16, its bf16 copy, and an executor
  // may leave da1 itself unwritten: the fused kernel does). h2 and dh2 are
  // [M, H] work arrays; da1 may alias h2. The default (ops.cpp)
  // runs the seven ops above in turn; HostOps fuses them into one pass over the rows, CudaOps
  // into two (kernels/head_loss.h).
  struct HeadLoss {
    const float *a1, *b1, *w_out, *b_out;  // [M, H] pre-bias fc1 output; fc1.bias; fc_out
    const int32_t* actions;                // [M]
    const float* adv;                      // [M]
    int M, H;
    PolicyObjective objective;  // its old_logp, if any, is [M] like adv
    DropoutSpec drop;
    float *logits, *dlogits;  // [M, 3] each, written
    float *h2, *dh2, *da1;    // [M, H]
    float *g_b1, *g_w_out, *g_b_out, *loss, *scratch;
    Bf16* da1_bf16 = nullptr;  // [M, H], or nullptr
  };
  virtual void policy_head_loss(const HeadLoss& h);

  // The whole loss pass after the trunk's forward (spec steps 5-6) as one op: policy_head_loss,
  // then the trunk's backward (engine/policy.cpp, policy_trunk_backward); every gradient in g is
  // overwritten. acts holds the trunk's activations of all M rows (a1 and h2 are clobbered),
  // trunk_work is one more [M, H] work array. The default (ops.cpp) runs the two over all M rows;
  // HostOps runs them block by block of rows so that each block stays in cache
  // (engine/host/loss_pass.cpp).
  struct LossPass {
    HeadLoss head;  // head.da1 is the gradient the trunk's backward starts from
    ParamViews p, g;
    PolicyActs acts;
    const float* X;  // [M, D] observations
    int D;
    float* trunk_work;
  };
  virtual void loss_pass(const LossPass& l);

  // Returns and advantages (kernels/returns.h).
  virtual void discounted_returns(const float* rewards, float* returns, int T, int N, float gamma) = 0;
  virtual void normalize_advantages(const float* returns, float* adv, int count, float* scratch, float* stats_out) = 0;
  virtual void group_normalize_rewards(const float* rewards, float* out, int T, int G, int R, float* stats_out) = 0;

  // Optimiser (kernels/grad_norm.h, kernels/adamw.h, kernels/train_scalars.h).
  virtual void grad_norm(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch) = 0;
  // copies: the working copies the update also writes (kernels/adamw.h; none where a dst is null).
  virtual void adamw(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                     const AdamWConfig& cfg, const WeightCopies& copies) = 0;
  virtual void finish_update(TrainScalars* s) = 0;
  virtual void advance_schedule(TrainScalars* s) = 0;

  // Metrics (kernels/reduce.h, engine/metrics_ring.h).
  virtual void mean_f32(const float* x, int n, float* out, float* scratch) = 0;
  virtual void mean_i32(const int32_t* x, int n, float* out, float* scratch) = 0;
  virtual void snapshot_metrics(const TrainScalars* s, TrainScalars* ring) = 0;
  // The best epoch's state (kernels/best_snapshot.h): slabs are the 4 slabs of n floats each.
  virtual void best_snapshot(const TrainScalars* s, const float* slabs, size_t n, float* best,
                             TrainScalars* best_scalars) = 0;
  // The epoch's score once its games are played, s->score = the mean of scores[0..N), then
  // best_snapshot; and the epoch's end, s->reward = the mean of last_rewards[0..N), the metrics'
  // snapshot, then advance_schedule. Each one op so that an executor may run it as one kernel
  // (CudaOps); the defaults (ops.cpp) run the ops above in turn.
  virtual void score_epoch(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n, float* best,
                           TrainScalars* best_scalars, float* scratch);
  virtual void end_epoch(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, float* scratch);

  virtual void zero(void* p, size_t bytes) = 0;
  // Profiling ranges (NVTX on the CUDA executor in eager mode); no-ops elsewhere.
  virtual void range_push(const char*) {}
  virtual void range_pop() {}
};

// Step t of rollout r: rows t*N.. of its activations, actions and rewards, the next step's rows
// and observations unless t is the last (then obs_next is nullptr and next aliases now).
Ops::RolloutStep rollout_step_at(const Ops::Rollout& r, int t);

}  // namespace grpo
