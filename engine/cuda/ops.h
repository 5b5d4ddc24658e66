// Ops on a CUDA stream: every op is its launcher (kernels/, env/). Used eagerly, and under stream
// capture to record the epoch's graph; nothing here allocates or synchronises after construction
// (which makes the rollout loop's two counters and body stream).
#pragma once
#include <array>

#include "core/phase_clock.h"
#include "engine/cuda/graph_edges.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/ops.h"
#include "env/game_config.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"

#if !defined(GRPO_HAVE_CUDA)
#error "engine/cuda/ops.h needs the CUDA runtime (gpu or simt flavour)"
#endif

namespace grpo {

class CudaOps final : public Ops {
 public:
  CudaOps(const GameConfig& game, int replicas, Blas& blas, cudaStream_t stream)
      : game_(game),
        replicas_(replicas),
        blas_(blas),
        stream_(stream),
        loop_counters_(cuda::device_array<uint32_t>(2)),
        body_stream_(cuda::make_stream(cudaStreamNonBlocking)) {
    for (auto& s : side_streams_) s = cuda::make_stream(cudaStreamNonBlocking);
    for (auto& e : side_events_) e = cuda::make_event(cudaEventDisableTiming);
  }

  void games_reset(const GamesView& g, uint64_t seed, const uint32_t* epoch, float* obs) override;
  void games_step(const GamesView& g, const int32_t* actions, uint64_t seed, const uint32_t* epoch, uint32_t t,
                  float* reward, float* obs_next) override;
  void linear_forward(const float* X, const float* W, const float* b, float* Y, int M, int N, int K) override;
  void linear_backward_input(const float* dY, const float* W, float* dX, int M, int N, int K) override;
  void linear_backward_weight(const float* dY, const float* X, float* dW, int M, int N, int K,
                              bool accumulate) override;
  void bias_grad(const float* dY, float* db, int M, int N, float* scratch) override;
  void fc_in_forward(const float* X, const float* W_in, float* h0, int M, int N, int D) override;
  void fc_in_transpose(const float* W_in, float* W_inT, int N, int D) override;
  // Its rollout step writes h0 only when asked (Rollout::keep_h0), and its LayerNorm input backward
  // recomputes h0 from the observations at the presets' shapes.
  bool loss_pass_reads_h0(int N, int D) const override { return !layernorm_onepass::fits_device(N, D); }
  void cast_bf16(const float* x, Bf16* y, size_t n) override;
  void linear_forward_bf16(const Bf16* X, const Bf16* W, const float* b, float* Y, int M, int N, int K) override;
  void linear_backward_input_bf16(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) override;
  void linear_backward_weight_bf16(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                   bool accumulate) override;
  void layernorm_residual_forward(const LayerNormForward& a) override;
  void layernorm_residual_backward(const LayerNormBackward& a) override;
  // kernels/layernorm.h's layernorm_input_backward_cuda: dh0 never written, no product.
  void layernorm_input_backward(const LayerNormInputBackward& a) override;
  void bias_gelu_dropout_forward(const float* a, const float* bias, float* out, int M, int N,
                                 const DropoutSpec& d) override;
  void bias_gelu_dropout_backward(const float* dout, const float* a, const float* bias, float* da, float* dbias, int M,
                                  int N, const DropoutSpec& d, float* scratch) override;
  // Eagerly, the default (ops.cpp). Under capture with set_rollout_loop(true), when the
  // rollout's product takes the few-row kernel (the small preset), every step but the last
  // becomes one WHILE node whose body is kRolloutLoopStepsPerTrip (rollout_step.h) times that
  // product and the fused step, each reading the step from a device counter
  // (engine/cuda/rollout_loop_cuda.cpp): the graph holds 3 nodes and a body of 16 for T - 1
  // steps instead of 2 (T - 1). With set_rollout_cluster(true), where rollout_cluster_fits,
  // eagerly or not: games_reset, the trunk of step 0 and one kernel for all T steps
  // (engine/cuda/rollout_cluster.cu). Otherwise, with set_rollout_streams(k > 1), the games split
  // into k ranges, each stepped on its own stream (engine/cuda/rollout_streams_cuda.cpp).
  void rollout(const Rollout& r) override;
  // One kernel (rollout_step.h's rollout_start_cuda), every way of running the rollout.
  void rollout_start(const Rollout& r) override;
  // The fused kernel of engine/cuda/rollout_step.cu; Ops::rollout (the default) calls it.
  void rollout_step(const RolloutStep& s) override;
  // The one-pass head of kernels/head_loss.cu (two passes past H = 2048) instead of the default's
  // seven ops; h2 and dh2 are left untouched.
  void policy_head_loss(const HeadLoss& h) override;
  void sample_actions(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                      int32_t* actions) override;
  void policy_loss(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                   float* dlogits, float* loss_out, float* entropy_out, float* scratch) override;
  void action_log_probs(const float* logits, const int32_t* actions, int M, float* logp) override;
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
  // One kernel each (kernels/best_snapshot.h, engine/metrics_ring.h), the same bits as the ops
  // in turn.
  void score_epoch(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n, float* best,
                   TrainScalars* best_scalars, float* scratch) override;
  void end_epoch(const float* last_rewards, int N, TrainScalars* s, TrainScalars* ring, float* scratch) override;
  void zero(void* p, size_t bytes) override;
  void range_push(const char* name) override;
  void range_pop() override;
  // Ranges are on in eager mode only: inside a capture they would fire once, not on replay.
  void set_ranges(bool on) { ranges_ = on; }
  // TrainConfig::rollout_loop: on captures the rollout as a WHILE node where it can; off (the
  // default) step by step, as eager mode runs it.
  void set_rollout_loop(bool on) { rollout_loop_ = on; }
  // TrainConfig::rollout_streams: the rollout's games in k ranges (1 to kMaxRolloutStreams), each
  // range's products and steps on a stream of its own, forked after step 0's trunk and joined
  // after the last step, so one range's product runs beside another's row-local step. Where the
  // product is cuBLASLt's (the reference), each range's product is a smaller shape, which
  // cuBLASLt may answer with another algorithm: the bits are those of k, not of 1.
  static constexpr int kMaxRolloutStreams = 4;
  void set_rollout_streams(int k);
  // TrainConfig::rollout_cluster: the whole rollout as one cluster kernel where it fits;
  // tensor_cores (TrainConfig::rollout_cluster_mma): its product on bf16 tensor cores (bf16 runs
  // only; an fp32 run keeps the fmaf product).
  void set_rollout_cluster(bool on, bool tensor_cores = false) {
    rollout_cluster_ = on;
    cluster_mma_ = tensor_cores;
  }
  // How the cluster kernel's blocks wait at their mailboxes (bench_rollout_cuda times both).
  void set_rollout_cluster_wait(ClusterWait wait) { cluster_wait_ = wait; }
  // The cluster kernel's phase clocks (rollout_cluster.h's ClusterMark), and the fused step's in
  // the steps on one stream (rollout_step.h's StepMark; not the WHILE loop's body, nor the steps
  // on several streams), in the launches and captures from now on (bench_rollout_cuda); off by
  // default.
  void set_rollout_clocks(const PhaseClocks& clocks) { rollout_clocks_ = clocks; }
  void set_step_clocks(const PhaseClocks& clocks) { step_clocks_ = clocks; }

  // What the captures since the last reset put inside loop bodies: nodes (each counted once),
  // node runs per replay (nodes times trips), and the bodies' edges.
  struct LoopNodes {
    size_t nodes = 0, runs = 0;
    GraphEdges edges;
  };
  LoopNodes loop_nodes() const { return loop_nodes_; }
  void reset_loop_nodes() { loop_nodes_ = {}; }

 private:
  GameConfig game_;
  int replicas_;
  Blas& blas_;
  cudaStream_t stream_;
  bool ranges_ = false;
  bool rollout_loop_ = false;
  bool rollout_cluster_ = false;
  bool cluster_mma_ = false;
  ClusterWait cluster_wait_ = ClusterWait::Suspend;
  PhaseClocks rollout_clocks_, step_clocks_;
  int rollout_streams_ = 1;
  cuda::DeviceArray<uint32_t> loop_counters_;  // rollout_step.h's RolloutLoop::counters
  cuda::Stream body_stream_;                   // captures the loop's body
  LoopNodes loop_nodes_;
  // The rollout on rollout_streams_ streams (at most one a game; on one, Ops::rollout): stream_
  // plays the first range, side_streams_ the others; side_events_[0] forks them,
  // side_events_[1 + i] joins side stream i back.
  void rollout_on_streams(const Rollout& r);
  std::array<cuda::Stream, kMaxRolloutStreams - 1> side_streams_;
  std::array<cuda::Event, kMaxRolloutStreams> side_events_;
};

}  // namespace grpo
