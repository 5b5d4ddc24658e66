// The body of the fused rollout step (rollout_step.h) for one game, as a block-wide device
// function: rollout_step.cu runs it once per block (a block per game), the cluster rollout
// (rollout_cluster.cu) for each of its games in turn. One block of kStepThreads threads; the
// row's H columns in groups of four (one float4, one Philox call for their dropout bits), group c
// on thread c % kStepThreads, so a warp reads 512 contiguous bytes of a row at a time. Per game
// and step it reads a1 (H floats) and the parameters of the head and of fc_in/LayerNorm (from L2
// after the first game), and writes 3 logits, the action, the reward, D observation floats and
// the next step's h0, h1 (H each), mean and rstd.
#pragma once
#include <algorithm>

#include "engine/ops.h"
#include "env/games.h"
#include "kernels/activations_vec.cuh"
#include "kernels/dropout.h"
#include "kernels/fc_in.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/policy_head.h"
#include "kernels/welford.cuh"
#include "core/vector_access.h"

namespace grpo::rollout_step_detail {

constexpr int kStepThreads = 128;
constexpr int kStepWarps = kStepThreads / 32;
constexpr int kMaxObs = 32;
constexpr int kObsChunk = 8;  // inputs whose weights (rows of W_in transposed) a thread loads at once

// The block's shared scratch, a __shared__ variable of the calling kernel.
struct StepShared {
  float head_sums[kActions][kStepWarps];
  float welford[3 * kStepWarps];
  float obs[kMaxObs];
};

// Where else the next step's h1 goes, four columns at a time (col0, n <= 4 of them, the values
// before any rounding to bf16): nowhere for the stepwise kernel; the cluster kernel also writes
// the row into every block's staged h1 rows (rollout_cluster.cu).
struct NoH1Copy {
  __device__ __forceinline__ void operator()(unsigned, unsigned, const float (&)[4]) const {}
};

// Step t of game g: s holds step 0's pointers, or step t's with shift 0; rows shift.. are step
// t's. The last step (last) writes no next trunk. p: the parameters it reads (fc_in_w_t, ln_gamma,
// ln_beta, fc1_b, fc_out_w, fc_out_b), s.p's or a copy of them in shared memory, aligned as
// s.p's are (vec; fc_in_w_t 16-byte aligned always, its rows padded to 4). a1_row: the game's a1 row, s.now.a1's or a
// copy (16-byte aligned where vec). Every thread of the block calls it; it may return before its last barrier, so a
// caller that runs it again first passes a __syncthreads.
template <unsigned kKeep = 4, class H1Copy = NoH1Copy>
__device__ inline void rollout_step_block(const GameConfig& cfg, const Ops::RolloutStep& s, const ParamViews& p,
                                          uint32_t t, size_t shift, unsigned g, bool last, bool vec, StepShared& sh,
                                          const float* a1_row = nullptr, const H1Copy& h1_copy = H1Copy{}) {
  using namespace row_welford_ops;
  constexpr unsigned kAll = 0xFFFFFFFFu;
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned H = unsigned(s.H), groups = (H + 3) / 4;
  const uint32_t epoch = *s.epoch;
  const size_t row = shift + g;

  // fc_out's bias, for thread 0 after the head: loaded first, so that its round trip overlaps
  // the head's.
  float b_out[kActions];
  if (tid == 0)
#pragma unroll
    for (int a = 0; a < kActions; ++a) b_out[a] = p.fc_out_b[a];

  // Head: z = dropout(gelu(a1 + b1)) W_out^T, this thread's columns, then the block's sum.
  const float* a1 = a1_row ? a1_row : s.now.a1 + row * H;
  const float scale = dropout_scale(s.dropout);
  float z[kActions] = {0.f, 0.f, 0.f};
  for (unsigned c = tid; c < groups; c += kStepThreads) {
    const unsigned n = std::min(4u, H - 4 * c);
    const unsigned keep = dropout_keep4(s.dropout, s.seed, Purpose::DropoutRollout, epoch, t, uint32_t(g), c);
    float v[4], b[4];
    load4(a1 + 4 * c, n, vec, v);
    load4(p.fc1_b + 4 * c, n, vec, b);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) v[k] = (keep >> k & 1u) ? gelu(v[k] + b[k]) * scale : 0.f;
#pragma unroll
    for (int a = 0; a < kActions; ++a) {
      float w[4];
      load4(p.fc_out_w + size_t(a) * H + 4 * c, n, vec, w);
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) z[a] = fmaf(v[k], w[k], z[a]);
    }
  }
#pragma unroll
  for (int a = 0; a < kActions; ++a) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) z[a] += __shfl_down_sync(kAll, z[a], o);
    if (lane == 0) sh.head_sums[a][warp] = z[a];
  }
  __syncthreads();

  // One thread: the logits, the action and the game's step.
  float* obs_next = last ? nullptr : s.obs_next + shift * s.D;
  if (tid == 0) {
    float logits[kActions];
#pragma unroll
    for (int a = 0; a < kActions; ++a) {
      float sum = sh.head_sums[a][0];
      for (int w = 1; w < kStepWarps; ++w) sum += sh.head_sums[a][w];
      logits[a] = sum + b_out[a];
      s.now.logits[row * kActions + a] = logits[a];
    }
    const PolicyRow policy = policy_row(logits);
    int32_t* actions = s.actions + shift;
    actions[g] = sample_from(policy, action_uniform(s.seed, epoch, t, uint32_t(g)));
    const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, s.seed, epoch, t};
    // The observation also into shared memory, for fc_in below: not read back from global memory.
    step_one_game(cfg, s.games, g, actions, draws, t, s.rewards + shift, obs_next, obs_next ? sh.obs : nullptr);
  }
  if (last) return;  // no next trunk (uniform over the block)
  __syncthreads();

  // The next step's trunk start: h0 = obs W_in^T, Welford over gelu(h0), then h1. A thread's
  // group of four outputs takes input d's four weights from W_in transposed (p.fc_in_w_t,
  // kernels/fc_in.h) in one 16-byte load that its warp's neighbours continue; kObsChunk of them
  // are loaded before any is used, so they cost an L2 round trip a chunk (2 for D = 10). Each sum
  // runs over d ascending from 0, kernels/fc_in.h's order. h0 goes out only when the loss pass
  // reads it (s.next.h0 set: Ops::Rollout::keep_h0).
  const int D = s.D;
  const unsigned pitch = fc_in_t_pitch(int(H));
  float* h0 = s.next.h0 ? s.next.h0 + row * H : nullptr;
  const auto h0_group = [&](unsigned c, unsigned n, float(&acc)[4]) {
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[k] = 0.f;
    const float* wt = p.fc_in_w_t + 4 * c;
    for (int j0 = 0; j0 < D; j0 += kObsChunk) {
      float4 wv[kObsChunk];
#pragma unroll
      for (int i = 0; i < kObsChunk; ++i)
        wv[i] = j0 + i < D ? *vector_at<const float4>(wt + size_t(j0 + i) * pitch) : float4{};
#pragma unroll
      for (int i = 0; i < kObsChunk; ++i) {
        if (j0 + i >= D) break;
        fc_in_add4(sh.obs[j0 + i], wv[i], acc);
      }
    }
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[k] = k < n ? acc[k] : 0.f;
  };
  // From the Welford pass to the output pass a thread keeps in registers gelu(h0) of its first kKeep
  // groups (every group when H <= 16 kStepThreads = 2048 with kKeep 4: both presets) and h0 of its
  // first (every group when H <= 4 kStepThreads = 512, the small preset). Any other group's h0 is
  // read back from its store, or computed again when it stored nothing (10 FMAs an element, where
  // its GELU would cost ~28 instructions); its GELU is computed again past kKeep.
  Welford w{0.f, 0.f, 0.f};
  const auto welford_group = [&](unsigned c, float(&v)[4], float(&gv)[4]) {
    const unsigned n = std::min(4u, H - 4 * c);
    h0_group(c, n, v);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      gv[k] = gelu(v[k]);
      if (k < n) welford_add(w, gv[k]);
    }
    if (h0) store4(h0 + 4 * c, n, vec, v);
  };
  float kept[4] = {}, kept_gelu[kKeep][4] = {};
#pragma unroll
  for (unsigned i = 0; i < kKeep; ++i)
    if (tid + i * kStepThreads < groups) {
      float v[4];
      welford_group(tid + i * kStepThreads, v, kept_gelu[i]);
      if (i == 0)
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) kept[k] = v[k];
    }
  for (unsigned c = tid + kKeep * kStepThreads; c < groups; c += kStepThreads) {
    float v[4], gv[4];
    welford_group(c, v, gv);
  }
  w = row_welford<kStepThreads>(w, sh.welford);
  const float mu = w.mean, rs = rsqrtf(w.m2 / float(H) + kLayerNormEps);
  if (tid == 0) s.next.ln_mean[row] = mu, s.next.ln_rstd[row] = rs;
  float* h1 = s.next.h1 + row * H;
  Bf16* h1_bf16 = s.next.h1_bf16 ? s.next.h1_bf16 + row * H : nullptr;
  const auto output_group = [&](unsigned c, const float(&v)[4], const float(&gv)[4]) {
    const unsigned n = std::min(4u, H - 4 * c);
    float out[4], ga[4], be[4];
    load4(p.ln_gamma + 4 * c, n, vec, ga);
    load4(p.ln_beta + 4 * c, n, vec, be);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) out[k] = v[k] + (gv[k] - mu) * rs * ga[k] + be[k];
    h1_copy(4 * c, n, out);
    if (h1_bf16)
      store4_bf16(h1_bf16 + 4 * c, n, vec, out);
    else
      store4(h1 + 4 * c, n, vec, out);
  };
  const auto h0_again = [&](unsigned c, float(&v)[4]) {
    if (h0)
      load4(h0 + 4 * c, std::min(4u, H - 4 * c), vec, v);
    else
      h0_group(c, std::min(4u, H - 4 * c), v);
  };
#pragma unroll
  for (unsigned i = 0; i < kKeep; ++i) {
    const unsigned c = tid + i * kStepThreads;
    if (c >= groups) continue;
    if (i == 0) {
      output_group(c, kept, kept_gelu[0]);
    } else {
      float v[4];
      h0_again(c, v);
      output_group(c, v, kept_gelu[i]);
    }
  }
  for (unsigned c = tid + kKeep * kStepThreads; c < groups; c += kStepThreads) {
    float v[4], gv[4];
    h0_again(c, v);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) gv[k] = gelu(v[k]);
    output_group(c, v, gv);
  }
}

// Whether the float4 paths may run: H a multiple of 4 and every row pointer they touch aligned.
inline bool rollout_step_vec(const Ops::RolloutStep& s) {
  bool vec = s.H % 4 == 0;
  for (const float* q : {s.now.a1, s.p.fc1_b, s.p.fc_out_w, s.p.ln_gamma, s.p.ln_beta, s.next.h0, s.next.h1})
    vec = vec && aligned16(q);
  return vec && (s.next.h1_bf16 == nullptr || aligned8(s.next.h1_bf16));
}

}  // namespace grpo::rollout_step_detail
