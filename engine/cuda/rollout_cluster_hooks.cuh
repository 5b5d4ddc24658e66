// What the cluster kernel (rollout_cluster.cu) changes about rollout_step_block's step: its
// games' states kept on chip (GamesOnChip), and the hooks (ClusterHooks: the wait for a1 at the
// block's mailbox, the next h1 row sent to every block, the a1 row copied out while thread 0
// plays, the phase clocks' marks). Device code only, for .cu files.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/cluster_mailbox.cuh"
#include "core/phase_clock.cuh"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_cluster_copy.cuh"
#include "engine/cuda/rollout_cluster_product.cuh"
#include "engine/cuda/rollout_step_block.cuh"
#include "env/games.h"
#include "kernels/bf16.h"

namespace grpo::rollout_cluster_hooks {

using namespace rollout_step_detail;
using rollout_cluster_copy::C;
using rollout_cluster_copy::copy_row_out;
using rollout_cluster_detail::chunk4;

// The states of the block's games (game row i of the cluster at rows[i / C]), kept in its shared
// memory for all T steps: thread 0 reads and writes them there, where s.games would cost its
// step an L2 round trip (a mailbox wait's CCTL.IVALL has emptied L1) before it can play. They
// go back to s.games at the last step. step_one_game's Games (env/games.h).
struct GamesOnChip {
  GameState* rows;
  GamesView global;
  unsigned g0;
  bool last;
  template <class S>
  __device__ GameState load(int g) const {
    return rows[(unsigned(g) - g0) / C];
  }
  template <class S>
  __device__ void store(int g, const GameState& st) const {
    rows[(unsigned(g) - g0) / C] = st;
    if (last) global.store<S>(g, st);
  }
  // Warp 0's lanes store st, a 32-bit word a lane (take_played_ahead); the last step's store, to
  // global memory too, stays lane 0's.
  __device__ void store_by_lanes(int g, const GameState& st, unsigned lane) const {
    if (last) {
      if (lane == 0) store<AnySlots>(g, st);
      return;
    }
    constexpr unsigned kWords = sizeof(GameState) / sizeof(uint32_t);
    static_assert(kWords <= 32 && sizeof(GameState) % sizeof(uint32_t) == 0, "a 32-bit word a lane");
    if (lane < kWords)
      reinterpret_cast<uint32_t*>(rows + (unsigned(g) - g0) / C)[lane] = reinterpret_cast<const uint32_t*>(&st)[lane];
  }
};

// What the cluster kernel changes about rollout_step_block's step of game row `row` (StepHooks):
//   ready          the wait for the step's a1 rows at the block's a1 mailbox: in the block's first
//                  game of the step only (first), so that the step's draws run before it, while
//                  the other blocks finish their products;
//   h1             the next step's h1 row, four columns at a time, into that row of the staged h1
//                  rows (xs) of every block of the cluster through its xs mailbox, rounded as the
//                  global copy (T: fp32 or bf16); not into global memory (kH1Global false): the
//                  game's block copies it there from xs at the next step (while_playing);
//   games          the block's games' states on chip (GamesOnChip);
//   kGameAhead     the game's step for each action played before ready(), by warps that would
//                  wait there anyway: in the block's first game of the step (ahead), the one whose
//                  ready() waits;
//   while_playing  the game's a1 row and its step's h1 row (from xs; none at step 0, whose rows
//                  came from global memory) to global memory, for the loss pass, by warps 1..
//                  while warp 0 takes the game's outcome, which is on the step's path and takes
//                  longer;
//   mark_*         the head's, the outcome's, the game's and the statistics' PhaseClocks marks,
//                  in the block's first game.
template <class T>
struct ClusterHooks : StepHooks {
  static constexpr bool kH1Global = false;
  static constexpr bool kPrefetchTrunk = false;  // the parameters are on chip (OnChipParams)
  static constexpr bool kGameAhead = true;       // warps 1..3 would wait at ready() anyway
  static constexpr bool kStageGame = false;      // the states are on chip (GamesOnChip)
  static constexpr bool kEqualCountTree = true;  // registers to spare (the small preset's at 156 of 168)
  T* xs;
  unsigned stride, row, H;
  GamesOnChip on_chip;
  float* a1_out;
  T* h1_out;
  const float* a1_row;
  bool first;
  Mailbox *a1_box, *xs_box;
  uint32_t a1_parity;  // the step's phase of the a1 mailbox
  bool spin;           // ClusterWait::Spin
  PhaseClocks clocks;
  uint32_t t;
  __device__ ClusterHooks(T* xs_, unsigned stride_, unsigned row_, unsigned H_, const GamesOnChip& on_chip_,
                          float* a1_out_, T* h1_out_, const float* a1_row_, bool first_, Mailbox* a1_box_,
                          Mailbox* xs_box_, uint32_t a1_parity_, bool spin_, const PhaseClocks& clocks_, uint32_t t_)
      : xs(xs_),
        stride(stride_),
        row(row_),
        H(H_),
        on_chip(on_chip_),
        a1_out(a1_out_),
        h1_out(h1_out_),
        a1_row(a1_row_),
        first(first_),
        a1_box(a1_box_),
        xs_box(xs_box_),
        a1_parity(a1_parity_),
        spin(spin_),
        clocks(clocks_),
        t(t_) {}
  // The one place every thread of the cluster waits for a1 (the emulator wants one site).
  __device__ static void wait_for_a1(Mailbox* box, uint32_t parity, bool spin) {
    GRPO_MAILBOX_WAIT_OR_SPIN(box, parity, spin);
  }
  __device__ __forceinline__ void ready() const {
    if (first) {
      phase_mark(clocks, t, kMarkDrawn);
      wait_for_a1(a1_box, a1_parity, spin);
      phase_mark(clocks, t, kMarkA1);
    }
  }
  __device__ __forceinline__ bool ahead() const { return first; }
  __device__ __forceinline__ void h1(unsigned col0, unsigned n, const float (&v)[4]) const {
    T* local = xs + size_t(row) * stride + col0;
    float w[4];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) w[k] = k < n ? v[k] : 0.f;
    const auto chunk = chunk4(local, w);
    auto* at = reinterpret_cast<std::remove_const_t<decltype(chunk)>*>(local);
    mailbox_broadcast<C>(at, xs_box, chunk);
  }
  __device__ __forceinline__ const GamesOnChip& games(const Ops::RolloutStep&) const { return on_chip; }
  // The h1 row is the game's own, which only its trunk rewrites (after the game's barrier).
  __device__ __forceinline__ void while_playing() const {
    copy_row_out(a1_out, a1_row, H, 32);
    if (h1_out) copy_row_out(h1_out, xs + size_t(row) * stride, H, 32);
  }
  __device__ __forceinline__ void mark_head() const {
    if (first) phase_mark(clocks, t, kMarkHead);
  }
  __device__ __forceinline__ void mark_outcome() const {
    if (first) phase_mark(clocks, t, kMarkOutcome);
  }
  __device__ __forceinline__ void mark_game() const {
    if (first) phase_mark(clocks, t, kMarkGame);
  }
  __device__ __forceinline__ void mark_stats() const {
    if (first) phase_mark(clocks, t, kMarkStats);
  }
};

}  // namespace grpo::rollout_cluster_hooks
