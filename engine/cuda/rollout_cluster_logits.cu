// The rollout's T steps in one kernel of thread-block clusters with one exchange a step
// (ClusterExchange::Logits, rollout_cluster.h): the small preset's shape only (hidden 512, bf16
// on tensor cores, one game a block). As in rollout_cluster.cu, block r of a cluster holds
// columns 64r.. of fc1 (its 64 rows of W1 in shared memory for all T steps) and multiplies the
// cluster's h1 rows by them. Then, instead of sending a1 to each game's block and getting every
// game's next h1 row back (two exchanges), each block runs the head on its own 64 columns of every
// game and sends the three logits' shares (a float4 a game) to every block. With the eight shares
// every block samples every game's action, takes its outcome played ahead, and computes every
// game's next h1 row itself: one exchange of 16 bytes a game and block instead of a1's and h1's
// rows, for eight trunks a block instead of one.
//
// The bits are the steps' (rollout_step.cu): a game is a half warp (16 lanes), lane j its group j
// of the block's 16 groups of four columns in the head, and its groups j, j + 16, ..., j + 112 in
// the trunk. The head's group sums are the step's lanes' sums, and a half warp's butterfly (8, 4,
// 2, 1) is the step's half-warp tree, which step_head adds first; the receivers add the eight
// shares as the step's last level (16) and thread 0's sum over warps do. In the trunk, lane j's
// groups 32w + j and 32w + j + 16 are the pair the step's tree merges first in warp w; their
// merge, then the half warp's shfl_down levels 8, 4, 2, 1 and the four warps' summaries merged in
// order are that tree. Every blocks computes the same games from the same inputs in the same
// order, so their copies of a game's state and h1 row agree; the game's own block (rank = the
// game's row in the cluster) writes its rows to global memory, for the loss pass, and each block
// its own columns of a1.
//
// The one exchange goes through two mailboxes taken in turn (core/cluster_mailbox.cuh): block b
// sends the shares of step t into phase t / 2 of mailbox t % 2 after its product of step t, which
// followed its wait of step t - 1, which needed the receiver's shares of step t - 1, which the
// receiver sent after its trunk of step t - 2, after its wait of step t - 2: so the receiver's
// phase of step t - 2 in that mailbox has completed, and its reads of those shares (its policy of
// step t - 2, before that trunk) are done.
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "core/phase_clock.cuh"
#include "core/vector_access.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_cluster_copy.cuh"
#include "engine/cuda/rollout_cluster_logits.h"
#include "engine/cuda/rollout_cluster_plan.h"
#include "engine/cuda/rollout_cluster_product.cuh"
#include "engine/cuda/rollout_step.h"
#include "engine/cuda/rollout_step_block.cuh"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace grpo {

namespace {

using namespace rollout_step_detail;
using namespace rollout_cluster_detail;
using rollout_cluster_copy::C;
using rollout_cluster_copy::stage_rows;

constexpr unsigned kH = 4 * kStepThreads;              // 512: the step's head, one group of four columns a thread
constexpr unsigned kCols = kH / C;                     // 64: a block's columns of fc1
constexpr unsigned kHalf = kCols / 4;                  // 16: a game's lanes, a group of the block's columns each
constexpr unsigned kGames = kStepThreads / kHalf;      // 8: the most games a cluster has (one a block)
constexpr unsigned kSlots = kH / 4 / kHalf;            // 8: a lane's groups of its game's trunk
constexpr unsigned kStride = (kH + 15) / 16 * 16 + 8;  // bf16: smem_stride(kH, true)
constexpr unsigned kA1Pitch = kCols + 4;  // floats: the product's stores from mma fragments hit distinct banks
static_assert(kGames == C && kSlots == 8 && kStepWarps == 4, "a half warp a game, its shares a half warp's sums");

// The kernel's dynamic shared memory, in bytes from its start. The trunk's parameters for every
// column (W_in transposed: D rows of kH; gamma, beta), the head's for the block's columns only
// (fc1's bias, fc_out's three rows, fc_out's bias), the block's rows of W1 (ws), the cluster's h1
// rows (xs), the block's a1 columns of every game, the games' states and their steps played
// ahead, the shares (two buffers: step parity, game, sending block) and the two mailboxes.
struct Layout {
  size_t w_in_t, gamma, beta, b1, w_out, b_out, ws, xs, a1, states, ahead, shares, mail, bytes;
  GRPO_HD explicit Layout(unsigned D) {
    const auto r16 = [](size_t n) { return (n + 15) / 16 * 16; };
    w_in_t = 0;
    gamma = w_in_t + size_t(D) * kH * sizeof(float);
    beta = gamma + kH * sizeof(float);
    b1 = beta + kH * sizeof(float);
    w_out = b1 + kCols * sizeof(float);
    b_out = w_out + kActions * kCols * sizeof(float);
    ws = b_out + 16;
    xs = ws + size_t(kCols) * kStride * sizeof(Bf16);
    a1 = xs + size_t(kGames) * kStride * sizeof(Bf16);
    states = a1 + size_t(kGames) * kA1Pitch * sizeof(float);
    ahead = r16(states + kGames * sizeof(GameState));
    shares = r16(ahead + size_t(kGames) * kActions * sizeof(GameAhead));
    mail = shares + 2 * kGames * C * sizeof(float4);
    bytes = mail + 2 * sizeof(Mailbox);
  }
};

// The cluster's games' states on chip, game g at rows[g - g0] (play_ahead's Games).
struct ClusterGames {
  GameState* rows;
  unsigned g0;
  template <class S>
  __device__ GameState load(int g) const {
    return rows[unsigned(g) - g0];
  }
};

// The product's a1 element (row, col): into the block's a1 columns (col of its kCols).
struct A1Tile {
  float* a1;
  __device__ __forceinline__ void operator()(unsigned row, unsigned col, float v) const {
    a1[row * kA1Pitch + col] = v;
  }
};

// Game row gi's next trunk from its observation x, by its half warp (lane j of kHalf): h0 of the
// lane's kSlots groups (j + kHalf s), their GELUs, the row's LayerNorm statistics in the step's
// order, and h1. Returns mu and rstd; h0 and gv stay the caller's for the output.
__device__ __forceinline__ void game_trunk(const float* x, unsigned D, const float* w_in_t, unsigned j,
                                           float (&h0)[kSlots][4], float (&gv)[kSlots][4], float& mu, float& rs) {
  using namespace row_welford_ops;
  constexpr unsigned kAll = 0xFFFFFFFFu;
  // Each sum over d ascending from 0 (kernels/fc_in.h's order, the step's), input d's weights
  // for the lane's groups in one row of W_in transposed.
#pragma unroll
  for (unsigned s = 0; s < kSlots; ++s)
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) h0[s][k] = 0.f;
#pragma unroll 2
  for (unsigned d = 0; d < D; ++d) {
    const float xd = x[d];
    const float* row = w_in_t + size_t(d) * kH + 4 * j;
#pragma unroll
    for (unsigned s = 0; s < kSlots; ++s) fc_in_add4(xd, *vector_at<const float4>(row + 4 * kHalf * s), h0[s]);
  }
  Welford leaf[kSlots];
#pragma unroll
  for (unsigned s = 0; s < kSlots; ++s) {
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) gv[s][k] = gelu(h0[s][k]);
    leaf[s] = welford_group4(gv[s], 4);
  }
  // The step's tree in warp w (lane l, group 32w + l): level 16 merges groups 32w + l and
  // 32w + l + 16, both this lane's (slots 2w and 2w + 1); levels 8, 4, 2, 1 run across the half
  // warp, into lane j = 0 (lanes past the level's half read what they do not use). Every group is
  // whole, so the two sides of a merge have the same count: the other lane's is this lane's.
  Welford u[kStepWarps];
#pragma unroll
  for (unsigned w = 0; w < kStepWarps; ++w) u[w] = welford_merge(leaf[2 * w], leaf[2 * w + 1]);
#pragma unroll
  for (int o = 8; o > 0; o >>= 1)
#pragma unroll
    for (unsigned w = 0; w < kStepWarps; ++w)
      u[w] = welford_merge(u[w], {u[w].n, __shfl_down_sync(kAll, u[w].mean, o), __shfl_down_sync(kAll, u[w].m2, o)});
  Welford r = u[0];
#pragma unroll
  for (unsigned w = 1; w < kStepWarps; ++w) r = welford_merge(r, u[w]);
  const unsigned first = threadIdx.x % 32 & kHalf;  // the half warp's lane j = 0
  mu = __shfl_sync(kAll, r.mean, first);
  rs = rsqrtf(__shfl_sync(kAll, r.m2, first) / float(kH) + kLayerNormEps);
}

// X: step 0's h1 rows (bf16); W: fc1.weight's bf16 copy. Not __restrict__: the kernel writes the
// later steps' h1 rows. At 2 blocks an SM (the plan's 17 clusters on 132 SMs need some SMs to run
// two), up to 255 registers a thread.
__global__ void __launch_bounds__(kStepThreads, 2)
    rollout_cluster_logits_kernel(GameConfig cfg, Ops::RolloutStep s, const Bf16* X, const Bf16* W, uint32_t steps,
                                  unsigned clusters, PhaseClocks clocks, bool spin) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  GRPO_DYNAMIC_SHARED(unsigned char, smem);
  const unsigned rank = cluster_block_rank(), cluster = blockIdx.x / C;
  const unsigned N = unsigned(s.N), D = unsigned(s.D);
  const unsigned g0 = unsigned(size_t(cluster) * N / clusters), g1 = unsigned(size_t(cluster + 1) * N / clusters);
  const unsigned rows = g1 - g0, c0 = rank * kCols;
  const Layout at(D);
  float* const w_in_t = reinterpret_cast<float*>(smem + at.w_in_t);
  float* const gamma = reinterpret_cast<float*>(smem + at.gamma);
  float* const beta = reinterpret_cast<float*>(smem + at.beta);
  float* const b1 = reinterpret_cast<float*>(smem + at.b1);
  float* const w_out = reinterpret_cast<float*>(smem + at.w_out);
  float* const b_out = reinterpret_cast<float*>(smem + at.b_out);
  Bf16* const ws = reinterpret_cast<Bf16*>(smem + at.ws);    // [kCols][kStride]: the block's rows of W1
  Bf16* const xs = reinterpret_cast<Bf16*>(smem + at.xs);    // [rows][kStride]: the step's h1 rows
  float* const a1 = reinterpret_cast<float*>(smem + at.a1);  // [rows][kA1Pitch]: the block's a1 columns
  GameState* const states = reinterpret_cast<GameState*>(smem + at.states);
  GameAhead* const ahead = reinterpret_cast<GameAhead*>(smem + at.ahead);  // [rows][kActions]
  float4* const shares = vector_at<float4>(smem + at.shares);              // [2][kGames][C]
  Mailbox* const boxes = reinterpret_cast<Mailbox*>(smem + at.mail);       // [2]
  if (threadIdx.x == 0) mailbox_init(boxes, 2, kStepWarps);
  // Launched overlapped: the parameters were written kernels before the one before this.
  stage_rows(ws, kStride, W + size_t(c0) * kH, kCols, kH);
  stage_rows(w_in_t, kH, s.p.fc_in_w_t, D, kH);  // fc_in_t_pitch(kH) is kH
  stage_rows(gamma, kH, s.p.ln_gamma, 1, kH);
  stage_rows(beta, kH, s.p.ln_beta, 1, kH);
  for (unsigned i = threadIdx.x; i < (1 + kActions) * kCols; i += kStepThreads) {
    const unsigned r = i / kCols, col = i % kCols;
    if (r == 0)
      b1[col] = s.p.fc1_b[c0 + col];
    else
      w_out[i - kCols] = s.p.fc_out_w[size_t(r - 1) * kH + c0 + col];
  }
  if (threadIdx.x < unsigned(kActions)) b_out[threadIdx.x] = s.p.fc_out_b[threadIdx.x];
  wait_for_previous_kernel();
  stage_rows(xs, kStride, X + size_t(g0) * kH, rows, kH);  // step 0's; the later steps' are the block's own
  if (threadIdx.x < rows) states[threadIdx.x] = s.games.load(int(g0 + threadIdx.x));
  const uint32_t epoch = *s.epoch;
  __syncthreads();
  GRPO_CLUSTER_SYNC();  // every block of the cluster has started: its mailboxes may be written
  span_mark(clocks, false);

  const unsigned lane = threadIdx.x % 32, gi = threadIdx.x / kHalf, j = threadIdx.x % kHalf;
  const unsigned first = lane & kHalf;               // the half warp's lane j = 0
  const bool plays = gi < rows;                      // whether the half warp has a game (the same for its lanes)
  const bool owner = gi == rank;                     // the game's own block writes its rows to global memory
  const unsigned g = g0 + gi, c = rank * kHalf + j;  // the game; the lane's group of the head
  const ClusterGames games{states, g0};
  const float scale = dropout_scale(s.dropout);
  const uint32_t remote = (C - 1) * rows * uint32_t(sizeof(float4));  // the other blocks' shares a phase
  for (uint32_t t = 0; t < steps; ++t) {
    const bool last = t + 1 == steps;
    const size_t row = size_t(t) * N + g;  // the game's row of step t (s holds step 0's views)
    const unsigned box = t & 1u;
    phase_mark(clocks, t, kLogitsMarkStep);
    const unsigned keep =
        plays ? dropout_keep4(s.dropout, s.seed, Purpose::DropoutRollout, epoch, t, uint32_t(g), c) : 0u;
    product_mma(xs, ws, rows, kCols, kH, A1Tile{a1});
    __syncthreads();  // the block's a1 columns of every game
    phase_mark(clocks, t, kLogitsMarkProduct);
    float z[kActions] = {0.f, 0.f, 0.f};
    if (plays) {
      float v[4];
      load4_smem(a1 + gi * kA1Pitch + 4 * j, v);
      *vector_at<float4>(s.now.a1 + row * kH + c0 + 4 * j) = make_float4(v[0], v[1], v[2], v[3]);
      head_terms<true>(b1 + 4 * j, w_out + 4 * j, kCols, 4, scale, keep, v, z);
    }
#pragma unroll
    for (int a = 0; a < kActions; ++a)
#pragma unroll
      for (int o = 8; o > 0; o >>= 1) z[a] += __shfl_xor_sync(kAll, z[a], o);
    if (plays && j < C)
      mailbox_send(shares + (box * kGames + gi) * C + rank, j, boxes + box, make_float4(z[0], z[1], z[2], 0.f));
    mailbox_sent(boxes + box, remote);
    phase_mark(clocks, t, kLogitsMarkSent);
    // While the other blocks' shares come: the game's step for each action (lanes 1..3), and the
    // action's uniform (lane 0).
    float u = 0.f;
    if (plays && j >= 1 && j <= unsigned(kActions))
      play_ahead(cfg, s, games, epoch, t, g, last, int32_t(j - 1), ahead[gi * kActions + j - 1]);
    if (plays && j == 0) u = action_uniform(s.seed, epoch, t, uint32_t(g));
    GRPO_MAILBOX_WAIT_OR_SPIN(boxes + box, t >> 1 & 1u, spin);
    phase_mark(clocks, t, kLogitsMarkShares);
    // The policy: the shares added as the step's tree and thread 0 add them (warp w's sum is
    // block 2w's share plus block 2w + 1's).
    int32_t action = 0;
    if (plays && j == 0) {
      const float4* in = shares + (box * kGames + gi) * C;
      float logits[kActions];
#pragma unroll
      for (int a = 0; a < kActions; ++a) {
        const auto at_a = [&](unsigned b) { return a == 0 ? in[b].x : a == 1 ? in[b].y : in[b].z; };
        float sum = at_a(0) + at_a(1);
        for (unsigned w = 1; w < kStepWarps; ++w) sum += at_a(2 * w) + at_a(2 * w + 1);
        logits[a] = sum + b_out[a];
      }
      action = sample_from(policy_row(logits), u);
      if (owner) {
#pragma unroll
        for (int a = 0; a < kActions; ++a) s.now.logits[row * kActions + a] = logits[a];
        s.actions[row] = action;
      }
    }
    __syncwarp();  // the steps played ahead, before any lane reads them or overwrites the state
    action = __shfl_sync(kAll, action, first);
    const GameAhead& o = ahead[(plays ? gi : 0) * kActions + action];
    if (plays) {
      constexpr unsigned kWords = sizeof(GameState) / sizeof(uint32_t);
      static_assert(sizeof(GameState) % sizeof(uint32_t) == 0, "a state copied a 32-bit word at a time");
      for (unsigned w = j; w < kWords; w += kHalf)
        reinterpret_cast<uint32_t*>(states + gi)[w] = reinterpret_cast<const uint32_t*>(&o.state)[w];
      if (owner) {
        if (j == 0) s.rewards[row] = o.reward;
        if (!last)
          for (unsigned d = j; d < D; d += kHalf) s.obs_next[row * D + d] = o.obs[d];
        if (last && j == 0) s.games.store<AnySlots>(int(g), o.state);
      }
    }
    phase_mark(clocks, t, kLogitsMarkPolicy);
    if (last) break;
    // The next trunk of every game, each by its half warp (one without a game computes zeros).
    float h0[kSlots][4], gv[kSlots][4], mu, rs;
    game_trunk(plays ? o.obs : ahead[0].obs, plays ? D : 0u, w_in_t, j, h0, gv, mu, rs);
    if (plays) {
      // Step t + 1's rows: `row` of s.next's views (step 1's from their first row).
      if (owner && j == 0) s.next.ln_mean[row] = mu, s.next.ln_rstd[row] = rs;
#pragma unroll
      for (unsigned sl = 0; sl < kSlots; ++sl) {
        const unsigned col = 4 * (j + kHalf * sl);
        float ga[4], be[4], out[4];
        load4_smem(gamma + col, ga);
        load4_smem(beta + col, be);
        trunk_output4(h0[sl], gv[sl], mu, rs, ga, be, out);
        const uint2 chunk = chunk4(xs + size_t(gi) * kStride + col, out);
        *vector_at<uint2>(xs + size_t(gi) * kStride + col) = chunk;
        if (owner) {
          *vector_at<uint2>(s.next.h1_bf16 + row * kH + col) = chunk;
          if (s.next.h0)
            *vector_at<float4>(s.next.h0 + row * kH + col) = make_float4(h0[sl][0], h0[sl][1], h0[sl][2], h0[sl][3]);
        }
      }
    }
    __syncthreads();  // every game's next h1 row, before the next product reads them
    phase_mark(clocks, t, kLogitsMarkTrunk);
  }
  span_mark(clocks, true);
  release_next_kernel();
  GRPO_CLUSTER_SYNC();  // no block exits while a send to it may be in flight
}

struct Plan {
  unsigned clusters = 0;  // 0: the shape does not fit
  size_t smem = 0;
};

// One game a block (ceil(N / 8) clusters), all of them at once, or none.
Plan plan_uncached(int N, int D) {
  const void* kernel = reinterpret_cast<const void*>(&rollout_cluster_logits_kernel);
  const size_t limit = cluster_plan::smem_limit({kernel}, 0);
  Plan p;
  p.clusters = unsigned((N + int(C) - 1) / int(C));
  p.smem = Layout(unsigned(D)).bytes;
  if (limit == 0 || p.smem > limit) return Plan{};
  cluster_plan::allow_smem({kernel}, limit);
  return cluster_plan::resident_clusters({kernel}, p.clusters, kStepThreads, p.smem) >= int(p.clusters) ? p : Plan{};
}

// Once per device and shape: the occupancy query is not free, and an eager run asks every epoch.
Plan plan_for(int N, int D) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static std::map<std::tuple<int, int, int>, Plan> plans;
  const auto key = std::make_tuple(dev, N, D);
  const auto it = plans.find(key);
  return it != plans.end() ? it->second : plans.emplace(key, plan_uncached(N, D)).first->second;
}

}  // namespace

bool rollout_cluster_logits_fits(int N, int H, int D, bool bf16) {
  return bf16 && H == int(kH) && D >= 1 && D <= kMaxObs && linear_forward_takes_few_rows(N, H, H, false) &&
         plan_for(N, D).clusters > 0;
}

void rollout_cluster_logits_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                                 const PhaseClocks& clocks, ClusterWait wait) {
  if (first.H != int(kH) || first.p.fc1_w_bf16 == nullptr)
    throw std::invalid_argument("rollout_cluster_cuda: one exchange a step takes hidden " + std::to_string(kH) +
                                " in bf16 only (got hidden " + std::to_string(first.H) + ")");
  const Plan p = plan_for(first.N, first.D);
  if (p.clusters == 0)
    throw std::invalid_argument("rollout_cluster_cuda: " + std::to_string(first.N) +
                                " games need more clusters of one game a block than the device holds at once");
  launch_cluster_overlapped(rollout_cluster_logits_kernel, dim3(p.clusters * C), dim3(kStepThreads), p.smem, stream, C,
                            game, first, static_cast<const Bf16*>(first.now.h1_bf16),
                            static_cast<const Bf16*>(first.p.fc1_w_bf16), uint32_t(steps), p.clusters, clocks,
                            wait == ClusterWait::Spin);
}

}  // namespace grpo
