// A per-op breakdown of an epoch: wraps any Ops and adds each call's time, taken by an OpClock,
// to its op's row. The host's clock is the steady clock around the call; a CUDA op returns at
// launch, so its clock records events on the stream instead (bench/cuda_breakdown.h).
#pragma once
#include <map>
#include <string>

#include "bench/host_ceiling.h"
#include "engine/ops.h"

namespace grpo::bench {

struct OpTime {
  double seconds = 0;
  long calls = 0;
};

// Times one op call: start() before it, stop() after it with the row it adds to (a std::map
// row, whose address is stable). A clock may add the time later (events read after a sync).
class OpClock {
 public:
  virtual ~OpClock() = default;
  virtual size_t start() = 0;
  virtual void stop(size_t token, OpTime& row) = 0;
};

class SteadyClock final : public OpClock {
 public:
  size_t start() override {
    t0_ = seconds_now();
    return 0;
  }
  void stop(size_t, OpTime& row) override { row.seconds += seconds_now() - t0_; }

 private:
  double t0_ = 0;
};

// whole_composites: the composite ops (rollout, loss pass, head loss, LayerNorm input backward,
// the epoch's score and its end) are one row each, timed around the inner executor's own
// implementation (the host's fused passes); otherwise they are composed here from the primitive
// ops, each timed (the CUDA ops).
class TimedOps final : public Ops {
 public:
  TimedOps(Ops& inner, OpClock& clock, bool whole_composites) : in_(inner), clock_(clock), whole_(whole_composites) {}
  std::map<std::string, OpTime> times;

#define GRPO_TIMED(name, call)            \
  do {                                    \
    const size_t token_ = clock_.start(); \
    call;                                 \
    OpTime& o_ = times[prefix_ + name];   \
    clock_.stop(token_, o_);              \
    ++o_.calls;                           \
  } while (0)

  void games_reset(const GamesView& g, uint64_t seed, const uint32_t* e, float* obs) override {
    GRPO_TIMED("games_reset", in_.games_reset(g, seed, e, obs));
  }
  void games_step(const GamesView& g, const int32_t* a, uint64_t seed, const uint32_t* e, uint32_t t, float* r,
                  float* o) override {
    GRPO_TIMED("games_step", in_.games_step(g, a, seed, e, t, r, o));
  }
  void linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) override {
    GRPO_TIMED("linear_forward", in_.linear_forward(X, W, b, Y, M, N, K));
  }
  void linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) override {
    GRPO_TIMED("linear_backward_input", in_.linear_backward_input(dY, W, dX, M, N, K));
  }
  void linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K, bool acc) override {
    GRPO_TIMED("linear_backward_weight", in_.linear_backward_weight(dY, X, dW, M, N, K, acc));
  }
  void cast_bf16(const float* x, Bf16* y, size_t n) override { GRPO_TIMED("cast_bf16", in_.cast_bf16(x, y, n)); }
  void linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) override {
    GRPO_TIMED("linear_forward_bf16", in_.linear_forward_bf16(X, W, b, Y, M, N, K));
  }
  void linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) override {
    GRPO_TIMED("linear_backward_input_bf16", in_.linear_backward_input_bf16(dY, W, dX, M, N, K));
  }
  void linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K, bool acc) override {
    GRPO_TIMED("linear_backward_weight_bf16", in_.linear_backward_weight_bf16(dY, X, dW, M, N, K, acc));
  }
  void weights_unchanged(const float* W, int N, int K) override {
    GRPO_TIMED("weights_unchanged", in_.weights_unchanged(W, N, K));
  }
  void fc_in_forward(const float* X, const float* W_in, float* h0, int M, int N, int D) override {
    GRPO_TIMED("fc_in_forward", in_.fc_in_forward(X, W_in, h0, M, N, D));
  }
  void fc_in_transpose(const float* W_in, float* W_inT, int N, int D) override {
    GRPO_TIMED("fc_in_transpose", in_.fc_in_transpose(W_in, W_inT, N, D));
  }
  void bias_grad(const float* dY, float* db, int M, int N, float* s) override {
    GRPO_TIMED("bias_grad", in_.bias_grad(dY, db, M, N, s));
  }
  void layernorm_residual_forward(const LayerNormForward& a) override {
    GRPO_TIMED("layernorm_forward", in_.layernorm_residual_forward(a));
  }
  void layernorm_residual_backward(const LayerNormBackward& a) override {
    GRPO_TIMED("layernorm_backward", in_.layernorm_residual_backward(a));
  }
  // Per op (whole_ false), the LayerNorm input backward is the composition, which reads h0.
  bool loss_pass_reads_h0(int N, int D) const override { return !whole_ || in_.loss_pass_reads_h0(N, D); }
  void layernorm_input_backward(const LayerNormInputBackward& a) override {
    if (!whole_) return Ops::layernorm_input_backward(a);
    GRPO_TIMED("layernorm_input_backward", in_.layernorm_input_backward(a));
  }
  void bias_gelu_dropout_forward(const float* a, const float* b, float* out, int M, int N,
                                 const DropoutSpec& d) override {
    GRPO_TIMED("gelu_dropout_forward", in_.bias_gelu_dropout_forward(a, b, out, M, N, d));
  }
  void bias_gelu_dropout_backward(const float* dout, const float* a, const float* b, float* da, float* db, int M, int N,
                                  const DropoutSpec& d, float* s) override {
    GRPO_TIMED("gelu_dropout_backward", in_.bias_gelu_dropout_backward(dout, a, b, da, db, M, N, d, s));
  }
  void rollout(const Rollout& r) override {
    if (!whole_) return Ops::rollout(r);
    GRPO_TIMED("rollout", in_.rollout(r));
  }
  void loss_pass(const LossPass& l) override {
    if (!whole_) return Ops::loss_pass(l);
    GRPO_TIMED("loss_pass", in_.loss_pass(l));
  }
  void policy_head_loss(const HeadLoss& h) override {
    if (!whole_) return Ops::policy_head_loss(h);
    GRPO_TIMED("policy_head_loss", in_.policy_head_loss(h));
  }
  void sample_actions(const float* l, int M, uint64_t seed, const uint32_t* e, uint32_t step, int32_t* a) override {
    GRPO_TIMED("sample_actions", in_.sample_actions(l, M, seed, e, step, a));
  }
  void policy_loss(const float* l, const int32_t* a, const float* adv, int M, const PolicyObjective& o, float* dl,
                   float* lo, float* eo, float* s) override {
    GRPO_TIMED("policy_loss", in_.policy_loss(l, a, adv, M, o, dl, lo, eo, s));
  }
  void action_log_probs(const float* l, const int32_t* a, int M, float* lp) override {
    GRPO_TIMED("action_log_probs", in_.action_log_probs(l, a, M, lp));
  }
  void discounted_returns(const float* r, float* R, int T, int N, float g) override {
    GRPO_TIMED("returns", in_.discounted_returns(r, R, T, N, g));
  }
  void normalize_advantages(const float* R, float* adv, int n, float* s, float* st) override {
    GRPO_TIMED("advantages", in_.normalize_advantages(R, adv, n, s, st));
  }
  void group_normalize_rewards(const float* r, float* out, int T, int G, int R, float* st) override {
    GRPO_TIMED("advantages", in_.group_normalize_rewards(r, out, T, G, R, st));
  }
  void grad_norm(const float* g, size_t n, TrainScalars* s, float mx, float* sc) override {
    GRPO_TIMED("grad_norm", in_.grad_norm(g, n, s, mx, sc));
  }
  void adamw(float* p, const float* g, float* m, float* v, size_t n, const TrainScalars* s, const AdamWConfig& c,
             const WeightCopies& copies) override {
    GRPO_TIMED("adamw", in_.adamw(p, g, m, v, n, s, c, copies));
  }
  void finish_update(TrainScalars* s) override { GRPO_TIMED("metrics", in_.finish_update(s)); }
  void advance_schedule(TrainScalars* s) override { GRPO_TIMED("metrics", in_.advance_schedule(s)); }
  void mean_f32(const float* x, int n, float* out, float* s) override {
    GRPO_TIMED("metrics", in_.mean_f32(x, n, out, s));
  }
  void mean_i32(const int32_t* x, int n, float* out, float* s) override {
    GRPO_TIMED("metrics", in_.mean_i32(x, n, out, s));
  }
  void best_snapshot(const TrainScalars* s, const float* slabs, size_t n, float* best,
                     TrainScalars* best_scalars) override {
    GRPO_TIMED("metrics", in_.best_snapshot(s, slabs, n, best, best_scalars));
  }
  void snapshot_metrics(const TrainScalars* s, TrainScalars* ring) override {
    GRPO_TIMED("metrics", in_.snapshot_metrics(s, ring));
  }
  void score_epoch(const int32_t* sc, int N, TrainScalars* s, const float* slabs, size_t n, float* best,
                   TrainScalars* best_scalars, float* scratch) override {
    if (!whole_) return Ops::score_epoch(sc, N, s, slabs, n, best, best_scalars, scratch);
    GRPO_TIMED("metrics", in_.score_epoch(sc, N, s, slabs, n, best, best_scalars, scratch));
  }
  void end_epoch(const float* r, int N, TrainScalars* s, TrainScalars* ring, float* scratch) override {
    if (!whole_) return Ops::end_epoch(r, N, s, ring, scratch);
    GRPO_TIMED("metrics", in_.end_epoch(r, N, s, ring, scratch));
  }
  void zero(void* p, size_t bytes) override { GRPO_TIMED("zero", in_.zero(p, bytes)); }
  // Phases name the rows: "rollout/linear_forward" vs "loss+backward/linear_forward".
  void range_push(const char* name) override { prefix_ = std::string(name) + "/"; }
  void range_pop() override { prefix_.clear(); }
#undef GRPO_TIMED

 private:
  Ops& in_;
  OpClock& clock_;
  bool whole_;
  std::string prefix_;
};

}  // namespace grpo::bench
