// Ops::rollout_step as one kernel (engine/ops.h has the contract; the default there, the ops in
// turn, is its host twin): one block per game runs the head, the sampling, the game and the next
// step's trunk up to fc1, so a rollout step is this kernel plus the product with fc1.
#pragma once
#include "core/phase_clock.h"
#include "engine/ops.h"
#include "env/game_config.h"

#if !defined(GRPO_HAVE_CUDA)
#error "engine/cuda/rollout_step.h needs the CUDA runtime (gpu or simt flavour)"
#endif
#include <cuda_runtime.h>

#include <cstdint>

namespace grpo {

// Games [first, first + count) of s's N (count -1: to the last). A rollout split over streams
// plays each range on its own stream; every game keeps its index, so its draws, rows and state are
// the ones it has when all N run in one launch.
struct GameRange {
  int first = 0, count = -1;
};

// The fused step's marks for PhaseClocks (core/phase_clock.h), at step s.t of the clocks: the
// block starts (launched overlapped, while the product before it still runs), its a1 has come
// (the wait for the product), the head is done (its barrier passed), the game is done (the
// trunk's barrier passed), the step is done. Phase k runs from mark k to mark k + 1 within the
// launch (PhaseEnd::LastMark: each step is a launch of its own); the last step has no trunk.
enum StepMark : unsigned { kStepMarkStart, kStepMarkA1, kStepMarkHead, kStepMarkGame, kStepMarkEnd };
constexpr unsigned kStepMarks = kStepMarkEnd + 1;
inline constexpr const char* kStepPhases[kStepMarks - 1] = {"a1 wait (product)", "head", "policy and game", "trunk"};

// Throws std::invalid_argument for a shape the kernel does not take (H outside the LayerNorm's
// 8..8192, D other than the game's, more than 32 observation floats), a range outside [0, N), or
// clocks of more than kStepMarks marks or 4 warps. `clocks` (bench_rollout_cuda): the StepMark
// marks of the launch's first clocks.blocks blocks (games first ..).
void rollout_step_cuda(const GameConfig& game, const Ops::RolloutStep& s, cudaStream_t stream, GameRange games = {},
                       const PhaseClocks& clocks = {});
// Ops::rollout_start as one kernel: block g resets game g (env/games.h's reset_one_game: its
// state, and its observation at row g of s.obs_next), then runs the fused step's trunk on that
// observation into row g of s.next: h0 (where s.next.h0 is set), the LayerNorm's statistics and
// h1 (or its bf16 copy). What games_reset, fc_in_forward and the LayerNorm forward did in three
// launches; the statistics add in the fused step's order, so step 0's trunk has the bits every
// later step's has. s: step views whose next rows and obs_next are step 0's (s.now is not read).
void rollout_start_cuda(const GameConfig& game, const Ops::RolloutStep& s, int replicas, cudaStream_t stream);
// The checks behind that exception, `op` naming the caller (also rollout_cluster.cu's).
void check_rollout_step_args(const GameConfig& game, const Ops::RolloutStep& s, const char* op);

// The kernel in the body of a WHILE graph node (engine/cuda/rollout_loop_cuda.cpp), which holds
// kRolloutLoopStepsPerTrip steps and replays them for every step but the last. It reads its step
// t from counters[0] when it runs and works on the rows of step t: s holds step 0's pointers (s.t
// is ignored, s.obs_next is set). The last of its blocks to finish sets counters[0] to t + 1,
// counters[1] back to 0, and the loop's condition to whether step t + 1 is looped too
// (t + 1 < steps). Where t >= steps (the last trip's steps past the loop's) it does nothing.
struct RolloutLoop {
  uint32_t* counters;  // [2], both 0 before the first step
  cudaGraphConditionalHandle cond;
  uint32_t steps;
};
// Each trip of the loop costs more than its nodes would as nodes of the graph (the H200: ~4.8 us
// a trip), so a trip runs several steps; the last one's surplus steps are empty launches.
constexpr uint32_t kRolloutLoopStepsPerTrip = 8;
void rollout_step_looped_cuda(const GameConfig& game, const Ops::RolloutStep& s, const RolloutLoop& loop,
                              cudaStream_t stream);

}  // namespace grpo
