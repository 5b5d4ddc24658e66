// Ops::rollout's T steps as one kernel of thread-block clusters (sm_90), after Ops::rollout_start
// (the games' reset and the trunk of step 0): each cluster plays a share of the games, each of
// its blocks holds a share of fc1.weight's rows in shared memory for the whole rollout, and the
// blocks of a cluster exchange a1 and h1 through mailboxes twice a step
// (engine/cuda/rollout_cluster.cu). The results are those of the few-row product and
// rollout_step_cuda step by step, bit for bit (with the product on tensor cores: in the
// emulator; a GPU's sums differ in the last places); TrainConfig::rollout_cluster
// (--cluster-rollout, --cluster-rollout-mma) picks it where rollout_cluster_fits.
#pragma once
#include "core/phase_clock.h"
#include "engine/ops.h"
#include "env/game_config.h"

#if !defined(GRPO_HAVE_CUDA)
#error "engine/cuda/rollout_cluster.h needs the CUDA runtime (gpu or simt flavour)"
#endif
#include <cuda_runtime.h>

namespace grpo {

constexpr unsigned kClusterBlocks = 8;  // the portable maximum

// How a block multiplies its share of fc1: fmaf chains on the CUDA cores (fp32 or bf16
// operands), or mma.sync on the bf16 tensor cores (bf16 only; rollout_cluster_product.cuh).
enum class ClusterProduct { Fma, TensorCores };

// How the blocks wait at their mailboxes, twice a step (core/cluster_mailbox.cuh): Suspend
// (mbarrier.try_wait, the default) or Spin (mbarrier.test_wait in a loop). The same run either
// way; which is sooner, bench_rollout_cuda measures.
enum class ClusterWait { Suspend, Spin };

// The kernel's marks a step for PhaseClocks (core/phase_clock.h): the step starts, the block's
// product is done, the block is ready to wait for its games' a1 rows (the mailbox's barrier and
// the step's draws done), those rows have arrived, the head is done (its barrier passed), the
// warp's part of the game is done (warp 0: the policy and the outcome taken; the other warps mark
// it at once and then copy a1 and h1 out), the game is done (the trunk's barrier passed), the
// trunk's statistics are done (its barrier passed), the trunk is done (h1 sent), every game's next
// h1 row has arrived. Phase k runs from mark k to mark k + 1 (the last to the next step's start),
// as kClusterPhases names it. The last step has no trunk: it marks up to the outcome. The head,
// the outcome, the game and the statistics are marked in a block's first game (fp32 blocks may
// play two), and not at all in a block without a game. The spans (PhaseClocks::spans, every
// block's) run from the first step's start to the end of the last step.
enum ClusterMark : unsigned {
  kMarkStep,
  kMarkProduct,
  kMarkDrawn,
  kMarkA1,
  kMarkHead,
  kMarkOutcome,
  kMarkGame,
  kMarkStats,
  kMarkTrunk,
  kMarkH1
};
constexpr unsigned kClusterMarks = kMarkH1 + 1;
inline constexpr const char* kClusterPhases[kClusterMarks] = {
    "product",
    "draws",
    "a1 wait",
    "head",
    "policy and outcome",
    "copies out",
    "trunk to statistics",
    "trunk output and sends",
    "h1 wait",
    "to the next step",
};
constexpr unsigned kClusterWarps = 4;  // a block's warps: the fused step's 128 threads

// Whether the device runs clusters and the rollout of N games at hidden H, observations of D
// floats, takes this path: the shape the few-row product takes (fp32 or bf16 operands, up to 256
// games), and a block's share of W1, the cluster's h1 rows and the step's other parameters
// (fc_in, LayerNorm, fc1.bias, fc_out: (D + 6) H floats) within the shared memory a block may
// opt into.
// TensorCores also needs bf16.
bool rollout_cluster_fits(int N, int H, int D, bool bf16, ClusterProduct product = ClusterProduct::Fma);

// Steps 0..steps-1 from step 0's views `first` (rollout_step_at(r, 0)): per step a1 = h1 W1^T
// (on the bf16 copies when first.p.fc1_w_bf16 is set), then the fused step. Throws
// std::invalid_argument for a shape rollout_step_cuda refuses, one that does not fit, or
// TensorCores without the bf16 copies.
// `clusters` (tests): that many clusters, at most N, instead of the plan (one game a block where
// the device holds that many clusters at once, else the most clusters it holds). `clocks`
// (bench_rollout_cuda): the ClusterMark marks of its blocks, steps and warps, clocks.marks at
// most kClusterMarks and clocks.warps at most kClusterWarps, else std::invalid_argument; and
// the spans of its blocks. `wait`: ClusterWait.
void rollout_cluster_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                          ClusterProduct product = ClusterProduct::Fma, unsigned clusters = 0,
                          const PhaseClocks& clocks = {}, ClusterWait wait = ClusterWait::Suspend);

}  // namespace grpo
