// Ops::rollout's T steps as one kernel of thread-block clusters (sm_90), after games_reset and
// the trunk of step 0: each cluster plays a share of the games, each of its blocks holds a share
// of fc1.weight's rows in shared memory for the whole rollout, and the blocks of a cluster exchange
// a1 and h1 through mailboxes twice a step (engine/cuda/rollout_cluster.cu). The results are those of the
// few-row product and rollout_step_cuda step by step, bit for bit (with the product on tensor
// cores: in the emulator; a GPU's sums differ in the last places); TrainConfig::rollout_cluster
// (--cluster-rollout, --cluster-rollout-mma) picks it where rollout_cluster_fits.
#pragma once
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
// the device holds that many clusters at once, else the most clusters it holds).
void rollout_cluster_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                          ClusterProduct product = ClusterProduct::Fma, unsigned clusters = 0);

}  // namespace grpo
