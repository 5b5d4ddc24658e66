// Returns and advantages (docs/spec/training.md, steps 3 and 4).
#pragma once
#include <cmath>
#include <cstddef>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

// R_t = r_t + gamma R_{t+1}, as one explicit fma so that the kernel and the host twin round
// identically (nvcc would contract the expression anyway; g++ at -std=c++17 would not).
GRPO_HD float discount_step(float reward, float gamma, float next_return) { return fmaf(gamma, next_return, reward); }

// Running (count, mean, M2) of Welford's algorithm, and Chan et al.'s merge of two of them.
// Counts are floats: exact below 2^24, which normalize_advantages checks.
struct Welford {
  float n, mean, m2;
};

GRPO_HD Welford welford_add(Welford w, float x) {
  w.n += 1.f;
  const float d = x - w.mean;
  w.mean += d / w.n;
  w.m2 += d * (x - w.mean);
  return w;
}

GRPO_HD Welford welford_merge(Welford a, Welford b) {
  if (b.n == 0.f) return a;
  if (a.n == 0.f) return b;
  const float n = a.n + b.n;
  const float d = b.mean - a.mean;
  const float fb = b.n / n;
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}

// The reference's normalisation given the mean m and sample std s of all returns:
// A = clamp((R - 0.5 m) / (max(s, 0.5) + 1e-6), -2, 2).
GRPO_HD float advantage_from(float ret, float mean, float std_dev) {
  const float a = (ret - 0.5f * mean) / (fmaxf(std_dev, 0.5f) + 1e-6f);
  return fminf(fmaxf(a, -2.f), 2.f);
}

// rewards[T, N] (row t = step, column = game) -> returns[T, N], with R_T = 0. One thread per
// game walks t = T-1 .. 0; returns may alias rewards (each element is read before it is written).
void discounted_returns_host(const float* rewards, float* returns, int T, int N, float gamma);

// Over all `count` returns: m = mean, s = sample std (divide by count - 1); stats_out = {m, s}
// (s before the max with 0.5); adv[i] = advantage_from(returns[i], m, s). count in [2, 2^24).
// Deterministic two-level reduction (Welford per thread on values shifted by returns[0], Chan
// merge across threads and blocks); scratch holds normalize_advantages_scratch_floats(count)
// floats (unused by the host twin, which runs Welford in double). stats_out is required. On the
// device, two kernels: the per-block partials, then the advantages, each of whose blocks merges
// the partials itself (the same tree in each, so the same m and s).
size_t normalize_advantages_scratch_floats(int count);
void normalize_advantages_host(const float* returns, float* adv, int count, float* scratch, float* stats_out);

// --algo grpo's group-relative rewards (docs/spec/training.md "Beyond the reference"). The N
// games are G groups of R replicas (game = group * R + replica, N = G R); group g's T R rewards
// rewards[t N + g R + j] have mean m_g and sample std s_g (divide by T R - 1), and
// out[i] = group_normalized(rewards[i], m_g, s_g). stats_out[2 g] = m_g, stats_out[2 g + 1] = s_g
// (nullable). out may alias rewards. T R in [2, 2^24).
constexpr float kGroupStdFloor = 1e-3f;  // a group whose rewards are all equal gets zeros, not 0/0
GRPO_HD float group_normalized(float reward, float mean, float std_dev) {
  return (reward - mean) / fmaxf(std_dev, kGroupStdFloor);
}
void group_normalize_rewards_host(const float* rewards, float* out, int T, int G, int R, float* stats_out);

#if defined(GRPO_HAVE_CUDA)
void group_normalize_rewards_cuda(const float* rewards, float* out, int T, int G, int R, float* stats_out,
                                  cudaStream_t stream);
void discounted_returns_cuda(const float* rewards, float* returns, int T, int N, float gamma, cudaStream_t stream);
void normalize_advantages_cuda(const float* returns, float* adv, int count, float* scratch, float* stats_out,
                               cudaStream_t stream);
#endif

// Throws std::invalid_argument unless 2 <= count < 2^24 (shared by the twin and the launcher).
void check_advantage_count(int count, const char* who);
// Throws std::invalid_argument unless T, G, R >= 1 and 2 <= T R < 2^24.
void check_group_shape(int T, int G, int R, const char* who);

}  // namespace grpo
