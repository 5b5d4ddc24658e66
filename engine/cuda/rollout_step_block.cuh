// The body of the fused rollout step (rollout_step.h) for one game, as a block-wide device
// function: rollout_step.cu runs it once per block (a block per game), the cluster rollout
// (rollout_cluster.cu) for each of its games in turn. One block of kStepThreads threads; the
// row's H columns in groups of four (one float4, one Philox call for their dropout bits), group c
// on thread c % kStepThreads, so a warp reads 512 contiguous bytes of a row at a time. Compiled
// twice: kVec (H a multiple of 4, every row 16-byte aligned: rollout_step_vec) takes every group
// whole in one vector access, with no test of its width; the other takes any H. Per game and
// step it reads a1 (H floats) and the parameters of the head and of fc_in/LayerNorm (from L2
// after the first game), and writes 3 logits, the action, the reward, D observation floats and
// the next step's h0, h1 (H each), mean and rstd.
#pragma once
#include <algorithm>
#include <type_traits>

#include "engine/cuda/rollout_step_game.cuh"
#include "engine/ops.h"
#include "kernels/activations_vec.cuh"
#include "kernels/dropout.h"
#include "kernels/fc_in.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/welford.cuh"
#include "core/prefetch.cuh"
#include "core/vector_access.h"

namespace grpo::rollout_step_detail {

// StepShared and, where a thread keeps more than two groups (kKeep > 2: the stepwise kernel),
// their h0 while the LayerNorm's reduction runs: 32 floats a thread would not fit 5 blocks'
// registers an SM, and computing them again costs D FMAs an element and W_in's loads again. A
// thread reads back only what it wrote itself.
template <unsigned kKeep>
struct StepScratch : StepShared {
  static constexpr unsigned kSlots = (kKeep > 2) ? kKeep * kStepThreads : 1;
  float4 h0[kSlots];
};

// What a caller changes about a step: one type whose members rollout_step_block calls. The
// stepwise kernel's are these (its ready() waits for the product: rollout_step.cu); the cluster
// kernel's (rollout_cluster.cu) replace the others.
//   ready()          every thread, before its first read of a1, once the step's setup that needs
//                    no a1 is done: nothing, where a1 is there when the block starts.
//   h1(col0, n, v)   where else the next step's h1 goes, four columns at a time (n <= 4 of them,
//                    the values before any rounding to bf16). With kH1Global false the trunk
//                    does not store h1 in global memory: the caller does it itself.
//   games(s)         where the game's state is: s.games, or anything with GamesView's
//                    load<S>(g) and store<S>(g, state) (env/games.h).
//   while_playing()  warps 1.. while thread 0 plays the game, or warp 0 takes the outcome played
//                    ahead (warp 0's other lanes wait for thread 0: a divergent warp runs its
//                    paths in turn).
//   kPrefetchTrunk   whether the trunk's parameters come from global memory, so that the block
//                    prefetches them while thread 0 plays (prefetch_trunk); false where the caller
//                    passes copies on chip, whose kernel then has no prefetch code at all.
//   mark_head(),     every thread, right after the head's barrier and the game's (the one before
//   mark_game()      the trunk): where a caller's PhaseClocks mark them.
//   mark_outcome(),  every thread, once its part of the game is done (thread 0's policy and game,
//   mark_stats()     or warp 0's outcome played ahead; at once in the other warps), and right
//                    after the trunk's statistics (its barrier): the same.
//   kGameAhead       whether lane 0 of warps 1..3 may play the game's step for each of the three
//                    actions before ready() (play_ahead), so that after the head thread 0 only
//                    samples the action and warp 0 takes its outcome (take_played_ahead, which
//                    needs games(s) to have store_by_lanes); ahead() says for which game: where the block
//                    would otherwise wait at ready() with nothing to do (the cluster kernel's
//                    first game of a step), not where other blocks' work fills the SM (the
//                    stepwise kernel at the reference: three games' issue for one).
//   kStageGame       whether warp 0's lanes copy the game's state from games(s) (its
//                    word_address) into shared memory before the head, where thread 0's game
//                    reads it (stage_state_word, StagedGame): false where the states are on
//                    chip already (the cluster kernel's).
//   kEqualCountTree  whether the trunk's statistics take row_welford's tree without tests where
//                    every thread holds the same count (H a multiple of 4 kStepThreads): a second
//                    tree in the kernel beside the general one, which the stepwise kernel has no
//                    registers for (at its 96 it took an 8-byte call stack).
struct StepHooks {
  static constexpr bool kH1Global = true;
  static constexpr bool kPrefetchTrunk = true;
  static constexpr bool kGameAhead = false;
  static constexpr bool kStageGame = true;
  static constexpr bool kEqualCountTree = false;
  __device__ __forceinline__ bool ahead() const { return false; }
  __device__ __forceinline__ void ready() const {}
  __device__ __forceinline__ void h1(unsigned, unsigned, const float (&)[4]) const {}
  __device__ __forceinline__ const GamesView& games(const Ops::RolloutStep& s) const { return s.games; }
  __device__ __forceinline__ void while_playing() const {}
  __device__ __forceinline__ void mark_head() const {}
  __device__ __forceinline__ void mark_outcome() const {}
  __device__ __forceinline__ void mark_game() const {}
  __device__ __forceinline__ void mark_stats() const {}
};

// A thread's columns: group c of four on thread c % kStepThreads, its i-th group
// c = tid + i kStepThreads. With kVec every group is whole.
template <bool kVec>
struct Columns {
  unsigned H, groups, tid;
  __device__ explicit Columns(unsigned h) : H(h), groups((h + 3) / 4), tid(threadIdx.x) {}
  __device__ unsigned width(unsigned c) const { return kVec ? 4u : std::min(4u, H - 4 * c); }
  __device__ unsigned group(unsigned i) const { return tid + i * kStepThreads; }
  __device__ bool here(unsigned i) const { return group(i) < groups; }
  // here(i) where the block's widest thread has at least G > i groups (with_kept_groups): then
  // only the last of them can be missing, and the others need no test.
  __device__ bool has(unsigned G, unsigned i) const { return i + 1 < G || here(i); }
};

// f(std::integral_constant<unsigned, G>{}) for the G groups the widest thread of the block has,
// at most kKeep: a thread keeps its first G groups in registers, and any later one (H past
// 4 kKeep kStepThreads) takes a per-group path.
template <unsigned kKeep, class F>
__device__ __forceinline__ void with_kept_groups(unsigned H, const F& f) {
  static_assert(kKeep >= 1 && kKeep <= 4, "keeps 1 to 4 groups a thread");
  const unsigned most = (H + 4 * kStepThreads - 1) / (4 * kStepThreads);
  if constexpr (kKeep >= 4)
    if (most >= 4) return f(std::integral_constant<unsigned, 4>{});
  if constexpr (kKeep >= 3)
    if (most >= 3) return f(std::integral_constant<unsigned, 3>{});
  if constexpr (kKeep >= 2)
    if (most >= 2) return f(std::integral_constant<unsigned, 2>{});
  f(std::integral_constant<unsigned, 1>{});
}

// One group of the head (n <= 4 columns, b1 and fc_out's row 0 at b and w_out, fc_out's rows
// H apart): v = dropout(gelu(a1 + b1)) in place, then its terms added to z[a], an fmaf chain over
// the columns.
template <bool kVec>
__device__ __forceinline__ void head_terms(const float* b, const float* w_out, unsigned H, unsigned n, float scale,
                                           unsigned keep, float (&v)[4], float (&z)[kActions]) {
  float bv[4];
  load4(b, n, kVec, bv);
  // Every lane computes all four and selects: a branch a column costs more than the GELU it
  // skips for the few dropped ones.
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) {
    const float kept_v = gelu(v[k] + bv[k]) * scale;
    v[k] = (keep >> k & 1u) ? kept_v : 0.f;
  }
#pragma unroll
  for (int a = 0; a < kActions; ++a) {
    float w[4];
    load4(w_out + size_t(a) * H, n, kVec, w);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) z[a] = fmaf(v[k], w[k], z[a]);
  }
}

// The trunk's output for four columns: h1 = h0 + LayerNorm(gelu(h0)), from h0 (v), its GELU (gv),
// the row's mean and rstd and the columns' gamma and beta. One expression for every kernel that
// writes h1 in the rollout, so that nvcc contracts it the same way in each.
__device__ __forceinline__ void trunk_output4(const float (&v)[4], const float (&gv)[4], float mu, float rs,
                                              const float (&ga)[4], const float (&be)[4], float (&out)[4]) {
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) out[k] = v[k] + (gv[k] - mu) * rs * ga[k] + be[k];
}

// Head: z = dropout(gelu(a1 + b1)) W_out^T over this thread's columns, the warps' sums into
// sh.head_sums (no barrier after). The first G groups' dropout bits are drawn before
// hooks.ready() (they need no a1), and their a1 is loaded before any is used: one round trip, not
// one a group.
template <bool kVec, unsigned G, class Hooks>
__device__ inline void step_head(const Ops::RolloutStep& s, const ParamViews& p, uint32_t epoch, uint32_t t, unsigned g,
                                 const float* a1, StepShared& sh, const Hooks& hooks) {
  constexpr unsigned kAll = 0xFFFFFFFFu;
  const Columns<kVec> cols(unsigned(s.H));
  const auto has = [&](unsigned i) { return cols.has(G, i); };
  const float scale = dropout_scale(s.dropout);
  float z[kActions] = {0.f, 0.f, 0.f};
  const auto keep_bits = [&](unsigned c) {
    return dropout_keep4(s.dropout, s.seed, Purpose::DropoutRollout, epoch, t, uint32_t(g), c);
  };
  const auto head_group = [&](unsigned c, float(&v)[4], unsigned keep) {
    const unsigned n = cols.width(c);
    head_terms<kVec>(p.fc1_b + 4 * c, p.fc_out_w + 4 * c, cols.H, n, scale, keep, v, z);
  };
  unsigned keep[G];
#pragma unroll
  for (unsigned i = 0; i < G; ++i) keep[i] = has(i) ? keep_bits(cols.group(i)) : 0u;
  hooks.ready();
  float av[G][4];
#pragma unroll
  for (unsigned i = 0; i < G; ++i)
    if (has(i)) load4(a1 + 4 * cols.group(i), cols.width(cols.group(i)), kVec, av[i]);
#pragma unroll
  for (unsigned i = 0; i < G; ++i)
    if (has(i)) head_group(cols.group(i), av[i], keep[i]);
  for (unsigned c = cols.group(G); c < cols.groups; c += kStepThreads) {
    float v[4];
    load4(a1 + 4 * c, cols.width(c), kVec, v);
    head_group(c, v, keep_bits(c));
  }
  const unsigned lane = cols.tid % 32, warp = cols.tid / 32;
#pragma unroll
  for (int a = 0; a < kActions; ++a) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) z[a] += __shfl_down_sync(kAll, z[a], o);
    if (lane == 0) sh.head_sums[a][warp] = z[a];
  }
}

// The next step's trunk, after the game's barrier: h0 = obs W_in^T, Welford over gelu(h0), then
// h1. A group of four outputs takes input d's four weights from W_in transposed (p.fc_in_w_t,
// kernels/fc_in.h) in one 16-byte load that its warp's neighbours continue, a chunk of inputs'
// loads in flight at once (h0_sums: two round trips for the presets' D = 10 at one or two
// groups a thread, five past that). Each sum runs over d ascending from 0, kernels/fc_in.h's
// order. h0 goes out only when the loss pass reads it (s.next.h0 set: Ops::Rollout::keep_h0).
// The first G groups stay in registers (past G = 2 their h0 waits in h0_stash, G kStepThreads
// float4, through the LayerNorm's reduction: StepScratch); a later group's h0 is read back from
// its store or computed again, and its GELU computed again.
template <bool kVec, unsigned G, class Hooks>
__device__ inline void step_trunk(const Ops::RolloutStep& s, const ParamViews& p, size_t row, StepShared& sh,
                                  float4* h0_stash, const Hooks& hooks) {
  using namespace row_welford_ops;
  const Columns<kVec> cols(unsigned(s.H));
  const auto has = [&](unsigned i) { return cols.has(G, i); };
  const unsigned H = cols.H;
  const int D = s.D;
  const unsigned pitch = fc_in_t_pitch(int(H));
  float* h0 = s.next.h0 ? s.next.h0 + row * H : nullptr;
  const auto zero_past_width = [&](unsigned c, float(&acc)[4]) {
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[k] = k < cols.width(c) ? acc[k] : 0.f;
  };
  // acc[i] = h0 of group c0 + i kStepThreads for the i < NG groups present(i) says the thread
  // has (the others 0): input d's weights for all of them (NG float4 in one row of W_in
  // transposed, 4 kStepThreads floats apart, at immediate offsets from one pointer that walks
  // down a row, pitch floats, at a time) and its value, read once for all NG. A chunk's rows are
  // all loaded before any is used, so it costs one round trip, not one a row (the small preset's
  // four warps an SM hide little): five rows for NG <= 2 (the presets' D = 10 is two chunks),
  // two past that (registers); rows past the last whole chunk go one at a time.
  const auto h0_sums = [&](unsigned c0, auto ng, const auto& present, auto& acc) {
    constexpr unsigned NG = decltype(ng)::value;
    constexpr int kChunk = NG <= 2 ? 5 : 2;
#pragma unroll
    for (unsigned i = 0; i < NG; ++i)
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) acc[i][k] = 0.f;
    if (!present(0)) return;  // a thread without a group (H < 4 kStepThreads)
    const float* wt = p.fc_in_w_t + 4 * c0;
    const auto rows = [&](int d0, auto count) {  // rows d0 .. d0 + n - 1
      constexpr int n = decltype(count)::value;
      float4 w[n][NG];
#pragma unroll
      for (int j = 0; j < n; ++j, wt += pitch)
#pragma unroll
        for (unsigned i = 0; i < NG; ++i)
          w[j][i] = present(i) ? *vector_at<const float4>(wt + i * 4 * kStepThreads) : float4{};
#pragma unroll
      for (int j = 0; j < n; ++j) {
        const float x = sh.obs[d0 + j];
#pragma unroll
        for (unsigned i = 0; i < NG; ++i)
          if (present(i)) fc_in_add4(x, w[j][i], acc[i]);
      }
    };
    int d = 0;
#pragma unroll 1
    for (; d + kChunk <= D; d += kChunk) rows(d, std::integral_constant<int, kChunk>{});
#pragma unroll 1
    for (; d < D; ++d) rows(d, std::integral_constant<int, 1>{});
#pragma unroll
    for (unsigned i = 0; i < NG; ++i) zero_past_width(c0 + i * kStepThreads, acc[i]);
  };
  // h0 of the first G groups, and of one later group c.
  const auto h0_first = [&](float(&acc)[G][4]) { h0_sums(cols.tid, std::integral_constant<unsigned, G>{}, has, acc); };
  const auto h0_group = [&](unsigned c, float(&acc)[4]) {
    float one[1][4];
    h0_sums(
        c, std::integral_constant<unsigned, 1>{}, [](unsigned) { return true; }, one);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[k] = one[0][k];
  };
  Welford w{0.f, 0.f, 0.f};
  const auto welford_group = [&](unsigned c, const float(&v)[4], float(&gv)[4]) {
    const unsigned n = cols.width(c);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) gv[k] = gelu(v[k]);
    w = welford_append(w, welford_group4(gv, n));
    if (h0) store4(h0 + 4 * c, n, kVec, v);
  };
  float h0v[G][4], gv[G][4];
  h0_first(h0v);
#pragma unroll
  for (unsigned i = 0; i < G; ++i)
    if (has(i)) {
      welford_group(cols.group(i), h0v[i], gv[i]);
      if constexpr (G > 2)
        h0_stash[i * kStepThreads + cols.tid] = make_float4(h0v[i][0], h0v[i][1], h0v[i][2], h0v[i][3]);
    }
  for (unsigned c = cols.group(G); c < cols.groups; c += kStepThreads) {
    float v[4], gvc[4];
    h0_group(c, v);
    welford_group(c, v, gvc);
  }
  // Every thread holds H / kStepThreads values where the groups fill the block evenly (both
  // presets): the tree's merges then need no test (row_welford's kEqualCounts).
  w = Hooks::kEqualCountTree && H % (4 * kStepThreads) == 0 ? row_welford<kStepThreads, true>(w, sh.welford)
                                                            : row_welford<kStepThreads>(w, sh.welford);
  hooks.mark_stats();
  // The variance m2 / H as a product where H is a power of two (both presets): the same value to
  // the bit (2^-k is exact, and both round m2 2^-k once), without the division's ~10 instructions
  // and its branch on the chain every warp waits for. 2^-k from 2^k's exponent field (254 - e):
  // an integer subtraction, where 1.f / H would be a division the compiler puts on the chain.
  const float var =
      (H & (H - 1)) == 0 ? w.m2 * __uint_as_float((254u << 23) - __float_as_uint(float(H))) : w.m2 / float(H);
  const float mu = w.mean, rs = rsqrtf(var + kLayerNormEps);
  if (cols.tid == 0) s.next.ln_mean[row] = mu, s.next.ln_rstd[row] = rs;
  float* h1 = s.next.h1 + row * H;
  Bf16* h1_bf16 = s.next.h1_bf16 ? s.next.h1_bf16 + row * H : nullptr;
  const auto output_group = [&](unsigned c, const float(&v)[4], const float(&gvc)[4]) {
    const unsigned n = cols.width(c);
    float out[4], ga[4], be[4];
    load4(p.ln_gamma + 4 * c, n, kVec, ga);
    load4(p.ln_beta + 4 * c, n, kVec, be);
    trunk_output4(v, gvc, mu, rs, ga, be, out);
    hooks.h1(4 * c, n, out);
    if constexpr (Hooks::kH1Global) {
      if (h1_bf16)
        store4_bf16(h1_bf16 + 4 * c, n, kVec, out);
      else
        store4(h1 + 4 * c, n, kVec, out);
    }
  };
#pragma unroll
  for (unsigned i = 0; i < G; ++i)
    if (has(i)) {
      if constexpr (G > 2) {
        const float4 v = h0_stash[i * kStepThreads + cols.tid];
        h0v[i][0] = v.x, h0v[i][1] = v.y, h0v[i][2] = v.z, h0v[i][3] = v.w;
      }
      output_group(cols.group(i), h0v[i], gv[i]);
    }
  for (unsigned c = cols.group(G); c < cols.groups; c += kStepThreads) {
    float v[4], gvc[4];
    if (h0)
      load4(h0 + 4 * c, cols.width(c), kVec, v);
    else
      h0_group(c, v);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) gvc[k] = gelu(v[k]);
    output_group(c, v, gvc);
  }
}

// While thread 0 plays the game, the trunk's parameters come into L1: W_in's D rows
// (transposed), LayerNorm's gamma and beta. A prefetch holds no register, so the trunk's loads
// find them in L1 once the game is over instead of each waiting on L2 (a kernel starts with none
// of them in L1). Warps 1.. issue them while they would wait at the game's barrier anyway, so
// that thread 0's game (and warp 0, whose lanes wait for it) starts at once. Only where a thread
// has at most two groups (the small preset's one): a block's parameters are (D + 2) x 4 x H
// bytes, 96 KB at the reference's H 2048, and five blocks an SM prefetching theirs overflow L1:
// the trunks then fetch them again, and thread 0's game waits behind the prefetches. Only where
// p is s.p's, in global memory (the cluster kernel reads copies on chip and compiles none of
// this: StepHooks::kPrefetchTrunk).
template <bool kVec>
__device__ inline void prefetch_trunk(const Ops::RolloutStep& s, const ParamViews& p) {
  const Columns<kVec> cols(unsigned(s.H));
  if (p.fc_in_w_t != s.p.fc_in_w_t || threadIdx.x < 32 || cols.groups > 2 * kStepThreads) return;
  const unsigned pitch = fc_in_t_pitch(int(cols.H));
  for (unsigned c = threadIdx.x - 32; c < cols.groups; c += kStepThreads - 32) {
    for (int d = 0; d < s.D; ++d) prefetch_l1(p.fc_in_w_t + size_t(d) * pitch + 4 * c);
    prefetch_l1(p.ln_gamma + 4 * c);
    prefetch_l1(p.ln_beta + 4 * c);
  }
}

// Step t of game g in epoch `epoch` (*s.epoch, read by the caller: the cluster kernel reads it
// once for all its steps, where every step would wait for it from L2 after a mailbox wait):
// s holds step 0's pointers, or step t's with shift 0; rows shift.. are step t's. The last step
// (last) writes no next trunk. p: the parameters it reads (fc_in_w_t, ln_gamma,
// ln_beta, fc1_b, fc_out_w, fc_out_b), s.p's or a copy of them in shared memory, aligned as
// s.p's are (kVec; fc_in_w_t 16-byte aligned always, its rows padded to 4). a1: the game's a1
// row, s.now.a1's or a copy (16-byte aligned where kVec): the caller's pointer, whose memory
// (global, or the cluster kernel's shared) nvcc can then see, where a choice made here between
// the two would leave it a generic load. A thread keeps up to kKeep groups of
// four columns in registers (with_kept_groups): every group when H <= 4 kKeep kStepThreads, both
// presets with the stepwise kernel's kKeep 4. hooks: what the caller changes (StepHooks). Every
// thread of the block calls it; it may return before its last barrier, so a caller that runs it
// again first passes a __syncthreads.
template <bool kVec, unsigned kKeep = 4, class Hooks = StepHooks>
__device__ inline void rollout_step_block(const GameConfig& cfg, const Ops::RolloutStep& s, const ParamViews& p,
                                          uint32_t epoch, uint32_t t, size_t shift, unsigned g, bool last,
                                          StepScratch<kKeep>& sh, const float* a1, const Hooks& hooks = Hooks{}) {
  static_assert(!(Hooks::kGameAhead && Hooks::kStageGame), "StepShared's ahead and state_words share their bytes");
  const unsigned H = unsigned(s.H);
  // For thread 0 after the head: fc_out's bias, loaded first so that its round trip overlaps the
  // head's, and the game's draws, before the head's hooks.ready() (GameDraws).
  float b_out[kActions];
  const bool ahead = Hooks::kGameAhead && hooks.ahead();  // the same for the whole block
  GameDraws drawn;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int a = 0; a < kActions; ++a) b_out[a] = p.fc_out_b[a];
    drawn = GameDraws(s.seed, epoch, t, g, !ahead);
  }
  if constexpr (Hooks::kGameAhead) {
    static_assert(kActions < kStepWarps, "a warp past warp 0 for each action");
    const unsigned a = threadIdx.x / 32 - 1;  // warps 1..kActions
    if (ahead && threadIdx.x % 32 == 0 && a < unsigned(kActions))
      play_ahead(cfg, s, hooks.games(s), epoch, t, g, last, int32_t(a), sh.ahead[a]);
  }
  if constexpr (Hooks::kStageGame)
    if (threadIdx.x < kGameStateWords) stage_state_word(cfg, hooks.games(s), g, threadIdx.x, sh);
  with_kept_groups<kKeep>(H, [&](auto kept) { step_head<kVec, kept.value>(s, p, epoch, t, g, a1, sh, hooks); });
  if constexpr (Hooks::kStageGame) async_copy_wait();  // before the barrier after which thread 0 reads them
  __syncthreads();
  hooks.mark_head();
  if (ahead) {  // never without kGameAhead: the constexpr keeps store_by_lanes out of other hooks' games
    if constexpr (Hooks::kGameAhead) {
      if (threadIdx.x < 32) take_played_ahead(s, hooks.games(s), b_out, drawn, shift, g, last, sh);
    }
  } else if (threadIdx.x == 0) {
    if constexpr (Hooks::kStageGame) {
      const StagedGame<std::decay_t<decltype(hooks.games(s))>> staged_game{sh.state_words, hooks.games(s)};
      step_game(cfg, s, staged_game, b_out, drawn, epoch, t, shift, g, last, sh);
    } else {
      step_game(cfg, s, hooks.games(s), b_out, drawn, epoch, t, shift, g, last, sh);
    }
  }
  hooks.mark_outcome();
  if (threadIdx.x >= 32) hooks.while_playing();
  if constexpr (Hooks::kPrefetchTrunk)
    if (!last) prefetch_trunk<kVec>(s, p);  // warps 1.. alone
  if (last) return;                         // no next trunk (uniform over the block)
  __syncthreads();
  hooks.mark_game();
  with_kept_groups<kKeep>(H, [&](auto kept) { step_trunk<kVec, kept.value>(s, p, shift + g, sh, sh.h0, hooks); });
}

// Whether the float4 paths may run: H a multiple of 4 and every row pointer they touch aligned.
inline bool rollout_step_vec(const Ops::RolloutStep& s) {
  bool vec = s.H % 4 == 0;
  for (const float* q : {s.now.a1, s.p.fc1_b, s.p.fc_out_w, s.p.ln_gamma, s.p.ln_beta, s.next.h0, s.next.h1})
    vec = vec && aligned16(q);
  return vec && (s.next.h1_bf16 == nullptr || aligned8(s.next.h1_bf16));
}

}  // namespace grpo::rollout_step_detail
