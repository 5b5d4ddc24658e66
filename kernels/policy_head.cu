// Policy head kernels (see policy_head.h): one thread per row of 3 logits.
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/policy_head.h"
#include "kernels/reduce.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {

constexpr unsigned kSampleThreads = 128;

__global__ void sample_actions_kernel(const float* __restrict__ logits, int M, uint64_t seed,
                                      const uint32_t* __restrict__ epoch, uint32_t step, int32_t* __restrict__ actions,
                                      float* __restrict__ logp_action) {
  follow_previous_kernel();
  const int i = blockIdx.x * kSampleThreads + threadIdx.x;
  if (i >= M) return;
  const PolicyRow r = policy_row(logits + 3 * static_cast<size_t>(i));
  const int32_t a = sample_from(r, action_uniform(seed, *epoch, step, static_cast<uint32_t>(i)));
  actions[i] = a;
  if (logp_action) logp_action[i] = r.logp[a];
}

// Stage 1: per-row loss, entropy and gradient; per-block sums of loss and entropy into
// partials[0 .. blocks) and partials[blocks .. 2 blocks). Grid fixed by M (reduce_blocks).
__global__ void policy_loss_partials_kernel(const float* __restrict__ logits, const int32_t* __restrict__ actions,
                                            const float* __restrict__ adv, int M, PolicyObjective obj,
                                            float* __restrict__ dlogits, float* __restrict__ partials) {
  follow_previous_kernel();
  __shared__ float warp_sums[kReduceThreads / 32];
  const float inv_m = 1.f / static_cast<float>(M);
  float loss = 0.f, entropy = 0.f;
  for (int i = blockIdx.x * kReduceThreads + threadIdx.x; i < M; i += gridDim.x * kReduceThreads) {
    const size_t o = 3 * static_cast<size_t>(i);
    float h;
    loss += objective_loss_row(obj, logits + o, i, actions[i], adv[i], inv_m, dlogits + o, &h);
    entropy += h;
  }
  loss = block_sum<kReduceThreads>(loss, warp_sums);
  entropy = block_sum<kReduceThreads>(entropy, warp_sums);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = loss;
    partials[gridDim.x + blockIdx.x] = entropy;
  }
}

// Stage 2, one block: both means, the partials added in double in a fixed tree.
__global__ void policy_loss_finalize_kernel(const float* __restrict__ partials, int blocks, int M,
                                            float* __restrict__ loss_out, float* __restrict__ entropy_out) {
  follow_previous_kernel();
  __shared__ double warp_sums[kReduceThreads / 32];
  double loss = 0.0, entropy = 0.0;
  for (int i = threadIdx.x; i < blocks; i += kReduceThreads) {
    loss += partials[i];
    entropy += partials[blocks + i];
  }
  loss = block_sum<kReduceThreads>(loss, warp_sums);
  entropy = block_sum<kReduceThreads>(entropy, warp_sums);
  if (threadIdx.x == 0) {
    *loss_out = static_cast<float>(loss / M);
    if (entropy_out) *entropy_out = static_cast<float>(entropy / M);
  }
}

__global__ void action_log_probs_kernel(const float* __restrict__ logits, const int32_t* __restrict__ actions, int M,
                                        float* __restrict__ logp) {
  follow_previous_kernel();
  const int i = blockIdx.x * kSampleThreads + threadIdx.x;
  if (i >= M) return;
  logp[i] = action_log_prob(logits + 3 * static_cast<size_t>(i), actions[i]);
}

}  // namespace

// Bytes per call: 12M logits read, 4M actions written, 4M log-probs written when asked, 4 (epoch).
void sample_actions_cuda(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                         int32_t* actions, float* logp_action, cudaStream_t stream) {
  if (M < 0) throw std::invalid_argument("sample_actions_cuda: M must be >= 0, got " + std::to_string(M));
  if (M == 0) return;
  launch_overlapped(sample_actions_kernel, ceil_div(M, kSampleThreads), kSampleThreads, 0, stream, logits, M, seed,
                    epoch, step, actions, logp_action);
}

// Bytes per call: 12M logits + 4M actions + 4M advantages read (+ 4M old log-probs for grpo),
// 12M dlogits written (32M in all), plus 16 * blocks of scratch (<= 4 KiB) and 8 for the two
// scalars.
void policy_loss_cuda(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                      float* dlogits, float* loss_out, float* entropy_out, float* scratch, cudaStream_t stream) {
  if (M < 1) throw std::invalid_argument("policy_loss_cuda: M must be >= 1, got " + std::to_string(M));
  const unsigned blocks = reduce_blocks(M);
  launch_overlapped(policy_loss_partials_kernel, blocks, kReduceThreads, 0, stream, logits, actions, adv, M, obj,
                    dlogits, scratch);
  launch_overlapped(policy_loss_finalize_kernel, 1, kReduceThreads, 0, stream, static_cast<const float*>(scratch),
                    static_cast<int>(blocks), M, loss_out, entropy_out);
}

// Bytes per call: 12M logits + 4M actions read, 4M log-probs written.
void action_log_probs_cuda(const float* logits, const int32_t* actions, int M, float* logp, cudaStream_t stream) {
  if (M < 0) throw std::invalid_argument("action_log_probs_cuda: M must be >= 0, got " + std::to_string(M));
  if (M == 0) return;
  launch_overlapped(action_log_probs_kernel, ceil_div(M, kSampleThreads), kSampleThreads, 0, stream, logits, actions, M,
                    logp);
}

}  // namespace grpo
