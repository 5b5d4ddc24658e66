// A steady-clock per-op breakdown of the host executor: wraps any Ops and adds each call's wall
// time to its op's row. Used by bench_epoch --breakdown (host only: a CUDA op returns at launch).
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

class TimedOps final : public Ops {
 public:
  explicit TimedOps(Ops& inner) : in_(inner) {}
  std::map<std::string, OpTime> times;

#define GRPO_TIMED(name, call)                  \
  do {                                          \
    const double t0_ = seconds_now();           \
    call;                                       \
    OpTime& o_ = times[prefix_ + name];         \
    o_.seconds += seconds_now() - t0_;          \
    ++o_.calls;                                 \
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
  void weights_fixed(const float* W, int N, int K) override { GRPO_TIMED("weights_fixed", in_.weights_fixed(W, N, K)); }
  void bias_grad(const float* dY, float* db, int M, int N, float* s) override {
    GRPO_TIMED("bias_grad", in_.bias_grad(dY, db, M, N, s));
  }
  void layernorm_residual_forward(const float* h0, const float* g, const float* b, float* h1, float* m, float* r,
                                  int M, int N) override {
    GRPO_TIMED("layernorm_forward", in_.layernorm_residual_forward(h0, g, b, h1, m, r, M, N));
  }
  void layernorm_residual_backward(const float* dh1, const float* h0, const float* g, const float* m, const float* r,
                                   float* dh0, float* dg, float* db, int M, int N, float* s) override {
    GRPO_TIMED("layernorm_backward", in_.layernorm_residual_backward(dh1, h0, g, m, r, dh0, dg, db, M, N, s));
  }
  void layernorm_input_backward(const float* dh1, const float* h0, const float* X, const float* g, const float* m,
                                const float* r, float* dh0, float* dg, float* db, float* dw, int M, int N, int D,
                                float* s) override {
    GRPO_TIMED("layernorm_input_backward", in_.layernorm_input_backward(dh1, h0, X, g, m, r, dh0, dg, db, dw, M, N, D, s));
  }
  void bias_gelu_dropout_forward(const float* a, const float* b, float* out, int M, int N,
                                 const DropoutSpec& d) override {
    GRPO_TIMED("gelu_dropout_forward", in_.bias_gelu_dropout_forward(a, b, out, M, N, d));
  }
  void bias_gelu_dropout_backward(const float* dout, const float* a, const float* b, float* da, float* db, int M,
                                  int N, const DropoutSpec& d, float* s) override {
    GRPO_TIMED("gelu_dropout_backward", in_.bias_gelu_dropout_backward(dout, a, b, da, db, M, N, d, s));
  }
  // The host's rollout and loss pass call their twins directly, so each is one row here.
  void rollout(const Rollout& r) override { GRPO_TIMED("rollout", in_.rollout(r)); }
  void loss_pass(const LossPass& l) override { GRPO_TIMED("loss_pass", in_.loss_pass(l)); }
  void policy_head_loss(const HeadLoss& h) override { GRPO_TIMED("policy_head_loss", in_.policy_head_loss(h)); }
  void sample_actions(const float* l, int M, uint64_t seed, const uint32_t* e, uint32_t step, int32_t* a) override {
    GRPO_TIMED("sample_actions", in_.sample_actions(l, M, seed, e, step, a));
  }
  void policy_loss(const float* l, const int32_t* a, const float* adv, int M, float ec, float* dl, float* lo,
                   float* eo, float* s) override {
    GRPO_TIMED("policy_loss", in_.policy_loss(l, a, adv, M, ec, dl, lo, eo, s));
  }
  void discounted_returns(const float* r, float* R, int T, int N, float g) override {
    GRPO_TIMED("returns", in_.discounted_returns(r, R, T, N, g));
  }
  void normalize_advantages(const float* R, float* adv, int n, float* s, float* st) override {
    GRPO_TIMED("advantages", in_.normalize_advantages(R, adv, n, s, st));
  }
  void grad_norm(const float* g, size_t n, TrainScalars* s, float mx, float* sc) override {
    GRPO_TIMED("grad_norm", in_.grad_norm(g, n, s, mx, sc));
  }
  void adamw(float* p, const float* g, float* m, float* v, size_t n, const TrainScalars* s,
             const AdamWConfig& c) override {
    GRPO_TIMED("adamw", in_.adamw(p, g, m, v, n, s, c));
  }
  void advance_schedule(TrainScalars* s) override { GRPO_TIMED("metrics", in_.advance_schedule(s)); }
  void mean_f32(const float* x, int n, float* out, float* s) override { GRPO_TIMED("metrics", in_.mean_f32(x, n, out, s)); }
  void mean_i32(const int32_t* x, int n, float* out, float* s) override {
    GRPO_TIMED("metrics", in_.mean_i32(x, n, out, s));
  }
  void snapshot_metrics(const TrainScalars* s, TrainScalars* ring) override {
    GRPO_TIMED("metrics", in_.snapshot_metrics(s, ring));
  }
  void zero(void* p, size_t bytes) override { GRPO_TIMED("zero", in_.zero(p, bytes)); }
  // Phases name the rows: "rollout/linear_forward" vs "loss+backward/linear_forward".
  void range_push(const char* name) override { prefix_ = std::string(name) + "/"; }
  void range_pop() override { prefix_.clear(); }
#undef GRPO_TIMED

 private:
  Ops& in_;
  std::string prefix_;
};

}  // namespace grpo::bench
