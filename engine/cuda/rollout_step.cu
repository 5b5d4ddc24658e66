// The fused rollout step (rollout_step.h). One block of kThreads per game: the row's H columns in
// groups of four (one float4, one Philox call for their dropout bits), group c on thread
// c % kThreads, so a warp reads 512 contiguous bytes of a row at a time. Per game and step it
// reads a1 (H floats) and the parameters of the head and of fc_in/LayerNorm (from L2 after the
// first game), and writes 3 logits, the action, the reward, D observation floats and the next
// step's h0, h1 (H each), mean and rstd: 8H + O(D) bytes of activations, where the ops in turn
// (six launches) also wrote and read back h2 and the logits.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "engine/cuda/rollout_step.h"
#include "env/games.h"
#include "kernels/activations_vec.cuh"
#include "kernels/dropout.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/policy_head.h"
#include "kernels/welford.cuh"

namespace grpo {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxObs = 32;
constexpr unsigned kAll = 0xFFFFFFFFu;

// loop.counters == nullptr: step s.t, at s's pointers. Otherwise step counters[0], at rows
// t * N.. of s's step-0 pointers (rollout_step.h).
__global__ void rollout_step_kernel(GameConfig cfg, Ops::RolloutStep s, RolloutLoop loop, bool vec) {
  using namespace row_welford_ops;
  __shared__ float head_sums[kActions][kWarps];
  __shared__ float welford_smem[3 * kWarps];
  __shared__ float obs[kMaxObs];
  const int g = blockIdx.x;
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned H = unsigned(s.H), groups = (H + 3) / 4;
  const uint32_t epoch = *s.epoch;
  // Every thread reads the step before the block's first barrier, so by the time thread 0
  // reports the block done below, no thread of it reads the counter again.
  const uint32_t t = loop.counters ? loop.counters[0] : s.t;
  const size_t shift = loop.counters ? size_t(t) * unsigned(s.N) : 0;  // rows
  const size_t row = shift + unsigned(g);

  // Head: z = dropout(gelu(a1 + b1)) W_out^T, this thread's columns, then the block's sum.
  const float* a1 = s.now.a1 + row * H;
  const float scale = dropout_scale(s.dropout);
  float z[kActions] = {0.f, 0.f, 0.f};
  for (unsigned c = tid; c < groups; c += kThreads) {
    const unsigned n = std::min(4u, H - 4 * c);
    const unsigned keep = dropout_keep4(s.dropout, s.seed, Purpose::DropoutRollout, epoch, t, uint32_t(g), c);
    float v[4], b[4];
    load4(a1 + 4 * c, n, vec, v);
    load4(s.p.fc1_b + 4 * c, n, vec, b);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) v[k] = (keep >> k & 1u) ? gelu(v[k] + b[k]) * scale : 0.f;
#pragma unroll
    for (int a = 0; a < kActions; ++a) {
      float w[4];
      load4(s.p.fc_out_w + size_t(a) * H + 4 * c, n, vec, w);
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) z[a] = fmaf(v[k], w[k], z[a]);
    }
  }
#pragma unroll
  for (int a = 0; a < kActions; ++a) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) z[a] += __shfl_down_sync(kAll, z[a], o);
    if (lane == 0) head_sums[a][warp] = z[a];
  }
  __syncthreads();

  // One thread: the logits, the action and the game's step.
  if (tid == 0) {
    float logits[kActions];
#pragma unroll
    for (int a = 0; a < kActions; ++a) {
      float sum = head_sums[a][0];
      for (int w = 1; w < kWarps; ++w) sum += head_sums[a][w];
      logits[a] = sum + s.p.fc_out_b[a];
      s.now.logits[row * kActions + a] = logits[a];
    }
    const PolicyRow policy = policy_row(logits);
    int32_t* actions = s.actions + shift;
    float* obs_next = s.obs_next ? s.obs_next + shift * s.D : nullptr;
    actions[g] = sample_from(policy, action_uniform(s.seed, epoch, t, uint32_t(g)));
    const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, s.seed, epoch, t};
    step_one_game(cfg, s.games, g, actions, draws, t, s.rewards + shift, obs_next);
    if (obs_next)
      for (int k = 0; k < s.D; ++k) obs[k] = obs_next[size_t(g) * s.D + k];
  }
  if (s.obs_next == nullptr) return;  // the last step: no next trunk (uniform over the grid)
  __syncthreads();

  // The next step's trunk start: h0 = obs W_in^T, Welford over gelu(h0), then h1.
  const int D = s.D;
  float* h0 = s.next.h0 + row * H;
  Welford w{0.f, 0.f, 0.f};
  for (unsigned c = tid; c < groups; c += kThreads) {
    const unsigned n = std::min(4u, H - 4 * c);
    float v[4];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      const float* wr = s.p.fc_in_w + size_t(4 * c + (k < n ? k : 0)) * D;
      float acc = 0.f;
      for (int j = 0; j < D; ++j) acc = fmaf(obs[j], wr[j], acc);
      v[k] = k < n ? acc : 0.f;
      if (k < n) welford_add(w, gelu(v[k]));
    }
    store4(h0 + 4 * c, n, vec, v);
  }
  w = row_welford<kThreads>(w, welford_smem);
  const float mu = w.mean, rs = rsqrtf(w.m2 / float(H) + kLayerNormEps);
  if (tid == 0) s.next.ln_mean[row] = mu, s.next.ln_rstd[row] = rs;
  float* h1 = s.next.h1 + row * H;
  Bf16* h1_bf16 = s.next.h1_bf16 ? s.next.h1_bf16 + row * H : nullptr;
  for (unsigned c = tid; c < groups; c += kThreads) {
    const unsigned n = std::min(4u, H - 4 * c);
    float v[4], ga[4], be[4];
    load4(h0 + 4 * c, n, vec, v);
    load4(s.p.ln_gamma + 4 * c, n, vec, ga);
    load4(s.p.ln_beta + 4 * c, n, vec, be);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) v[k] = v[k] + (gelu(v[k]) - mu) * rs * ga[k] + be[k];
    if (h1_bf16)
      store4_bf16(h1_bf16 + 4 * c, n, vec, v);
    else
      store4(h1 + 4 * c, n, vec, v);
  }
  if (loop.counters && tid == 0) {
    __threadfence();  // this block's reads of the counter come before its arrival
    if (atomicAdd(&loop.counters[1], 1u) == gridDim.x - 1) {
      __threadfence();  // and every block's arrival before the counter moves
      atomicExch(&loop.counters[1], 0u);
      atomicExch(&loop.counters[0], t + 1);
      cudaGraphSetConditional(loop.cond, t + 1 < loop.steps);
    }
  }
}

}  // namespace

namespace {
void launch_step(const GameConfig& game, const Ops::RolloutStep& s, const RolloutLoop& loop, cudaStream_t stream) {
  const auto bad = [](const std::string& what) { throw std::invalid_argument("rollout_step_cuda: " + what); };
  if (s.H < kLayerNormMinN || s.H > kLayerNormMaxN) bad("hidden size " + std::to_string(s.H) + " outside [8, 8192]");
  if (s.D != game.obs_dim() || s.D > kMaxObs) bad("observation size " + std::to_string(s.D) + " is not the game's");
  if (s.N != s.games.n) bad("N = " + std::to_string(s.N) + " but " + std::to_string(s.games.n) + " games");
  if (s.epoch == nullptr) bad("needs the epoch counter");
  check_dropout(DropoutSpec{s.dropout, s.seed, Purpose::DropoutRollout, s.epoch, s.t}, "rollout_step_cuda");
  check_games_args(game, s.games);
  if (s.N == 0) return;
  const ParamViews& p = s.p;
  bool vec = s.H % 4 == 0;
  for (const float* q : {s.now.a1, p.fc1_b, p.fc_out_w, p.ln_gamma, p.ln_beta, s.next.h0, s.next.h1})
    vec = vec && aligned16(q);
  vec = vec && (s.next.h1_bf16 == nullptr || aligned8(s.next.h1_bf16));
  launch(rollout_step_kernel, dim3(unsigned(s.N)), dim3(kThreads), 0, stream, game, s, loop, vec);
}
}  // namespace

void rollout_step_cuda(const GameConfig& game, const Ops::RolloutStep& s, cudaStream_t stream) {
  launch_step(game, s, RolloutLoop{nullptr, 0, 0}, stream);
}

void rollout_step_looped_cuda(const GameConfig& game, const Ops::RolloutStep& s, const RolloutLoop& loop,
                              cudaStream_t stream) {
  if (loop.counters == nullptr || s.obs_next == nullptr)
    throw std::invalid_argument("rollout_step_looped_cuda: needs the counters and a next step");
  launch_step(game, s, loop, stream);
}

}  // namespace grpo
