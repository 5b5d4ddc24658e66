// Everything a training run is configured by: the game, the network, the algorithm and the run.
// Filled from the command line (train_flags.cpp) or a checkpoint; validated before any work.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/precision.h"

#include "env/game_config.h"

namespace grpo {

enum class Backend { Auto, Cuda, Host };
// reference: the reference's returns, advantages and loss (docs/spec/training.md); grpo: group-
// relative advantages, clipped ratio and KL penalty ("Beyond the reference").
enum class Algo { Reference, Grpo };
// step: StepLR alone (x0.95 every 1000 epochs, the reference's); linear: StepLR times a linear
// decay to 0 over --total-epochs (docs/spec/training.md step 8).
enum class LrSchedule { Step, Linear };

struct TrainConfig {
  GameConfig game;
  // Network and algorithm (docs/spec/training.md). Defaults: the reference's command line.
  int hidden_size = 2048;
  int batch_size = 32;  // R: replicas per start group; N = groups * R games per epoch
  int total_epochs = 2000;
  int max_steps = 100;  // T
  float lr = 1e-4f;
  LrSchedule lr_schedule = LrSchedule::Step;
  float dropout = 0.1f;
  float gamma = 0.99f;
  float entropy_coef = 0.01f;
  float max_grad_norm = 1.0f;
  float weight_decay = 1e-5f;
  Algo algo = Algo::Reference;
  // --algo grpo only: optimisation passes over each rollout and the slices of each pass, the
  // ratio's clip epsilon and the weight of the KL penalty to the rollout policy.
  int ppo_epochs = 4;
  int minibatches = 1;  // slices of T / minibatches game steps per pass, one update each
  float clip = 0.2f;
  float kl_beta = 0.f;
  // The run.
  int patience = 500;          // 0 disables early stopping
  int checkpoint_every = 200;  // --save-checkpoint-per-num-epoch; -1: only at the end
  uint64_t seed = 42;
  Backend backend = Backend::Auto;
  bool use_graph = true;                  // false: --no-graph (eager, per-phase NVTX ranges)
  Precision precision = Precision::Fp32;  // --precision: the CUDA executor's products (kernels/precision.h)
  // --gemm-tuning: a file of cuBLASLt's answers per product (engine/cuda/gemm_tuning.h), timed on
  // this device by grpo tune-gemm; empty: the heuristic's first answer for each. Like the
  // backend, a choice of this machine: a checkpoint does not keep it.
  std::string gemm_tuning;
  // true: the CUDA executor's graph holds the rollout's steps but the last as one WHILE node where
  // the product takes the few-row kernel (engine/cuda/rollout_loop_cuda.cpp), eight steps a trip:
  // 36 nodes instead of 416 at the small preset; false: two nodes a step. Off by default: on an
  // H200 the eight-step trips took 21.1 us a step against 17.6 unrolled, and the body's kernels
  // launched overlapped since (predicted within 2-4%) are not measured yet (bench/README.md);
  // --rollout-loop, bench_epoch --rollout-loop on.
  bool rollout_loop = false;
  // The rollout's games in this many ranges (1 to 4), each range's products and steps on a CUDA
  // stream of its own, so that one range's product runs beside another's row-local step
  // (engine/cuda/rollout_streams_cuda.cpp; not where the cluster kernel or the WHILE loop runs
  // the rollout). 1 by default until a GPU has measured it (bench/README.md). Each range's
  // product is a smaller shape, which cuBLASLt may answer with another algorithm, or, at 256 rows
  // or fewer (the reference's 544 games in 3 or 4 ranges), the few-row kernel: a choice of this
  // machine, like gemm_tuning, not kept in checkpoints; --rollout-streams.
  int rollout_streams = 1;
  static constexpr int kMaxRolloutStreams = 4;
  // The whole rollout as one kernel of thread-block clusters where it fits (sm_90, the few-row
  // product's shapes: engine/cuda/rollout_cluster.h), eagerly and in the graph; the same run bit
  // for bit (--cluster-rollout; bench_epoch --cluster-rollout on). Off unless asked for: in fp32
  // an H200 ran it slower than the steps unrolled (bench/README.md).
  bool rollout_cluster = false;
  // The cluster kernel's product on bf16 tensor cores (mma.sync; needs Precision::Bf16, and
  // takes the cluster kernel with or without rollout_cluster: cluster_rollout()). Not the steps'
  // bits on a GPU: the tensor cores round their sums their own way, a few units in the last
  // place (--cluster-rollout-mma; bench_epoch --cluster-rollout mma). `grpo train` and `grpo
  // info` turn it on under --precision bf16 unless a rollout flag says otherwise
  // (apply_rollout_default); a TrainConfig built in code has it off.
  bool rollout_cluster_mma = false;
  std::string out_dir = "runs/latest";
  std::string metrics_path;  // empty: OUT/metrics.jsonl
  // --profile-epochs A:B: cudaProfilerStart before epoch A, cudaProfilerStop after epoch B
  // (tools/profile_nsys); -1: off. Only the CUDA executor has anything to profile.
  int profile_first = -1;
  int profile_last = -1;

  // The ranges of the sizes (README "Limits on input"); the flags and validate() share them.
  static constexpr int kMinHidden = 8, kMaxHidden = 8192;
  static constexpr int kMaxBatch = 65536;
  static constexpr int kMaxSteps = 100000;
  static constexpr int kMaxEpochs = (1 << 24) - 1;
  static constexpr int64_t kMaxGames = int64_t{1} << 24;
  // TrainScalars::lr_anneal_epochs of this run: its --total-epochs under the linear schedule.
  uint32_t lr_anneal_epochs() const { return lr_schedule == LrSchedule::Linear ? uint32_t(total_epochs) : 0u; }
  int games() const { return game.groups() * batch_size; }          // N (validate() bounds it first)
  int64_t samples() const { return int64_t{max_steps} * games(); }  // M = T * N
  int obs_dim() const { return game.obs_dim(); }                    // D
  // Throws UsageError naming the flag and its accepted range.
  // Whether the rollout runs as the cluster kernel where it fits (either flag).
  bool cluster_rollout() const { return rollout_cluster || rollout_cluster_mma; }
  // The rollout's way where no flag of kRolloutWayFlags chose one, in a fresh run (a resumed
  // one keeps its checkpoint's: resume_config): under bf16, where the rollout's product is the few-row kernel's shape
  // (the small preset; not the reference's 544 games), the cluster kernel on tensor cores. On an
  // H200 it ran the small preset's bf16 epoch 3x as fast as the steps (bench/README.md); it
  // still falls back to the steps on a device without room for it. fp32 and TF32 keep the steps.
  void apply_rollout_default();
  void validate() const;
  // The library defaults of the reference, sized for CPU comparisons (docs/spec/training.md).
  void apply_small_preset();
  // --algo grpo's defaults, chosen by the learning sweep at the small preset (bench/grpo/README.md):
  // no dropout, gamma 0.9, a linear learning-rate decay, 4 passes of 4 slices. Where 4 does not divide --max-steps, the
  // largest divisor below it.
  void apply_grpo_defaults();
};

// The flags that choose the rollout's way: the cluster kernel (on tensor cores or not), or the
// steps (unrolled or in a WHILE loop; either form of --rollout-loop asks for the steps).
inline constexpr const char* kRolloutWayFlags[] = {"--cluster-rollout", "--cluster-rollout-mma", "--no-cluster-rollout",
                                                   "--rollout-loop"};
// Whether given(flag) holds for one of them (given: the command line's "was this flag given").
template <class Given>
bool rollout_way_given(const Given& given) {
  for (const char* flag : kRolloutWayFlags)
    if (given(flag)) return true;
  return false;
}

const char* backend_name(Backend b);
const char* algo_name(Algo a);
const char* lr_schedule_name(LrSchedule s);

}  // namespace grpo
