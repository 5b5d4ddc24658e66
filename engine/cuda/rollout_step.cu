// The fused rollout step (rollout_step.h): one block per game runs rollout_step_block
// (rollout_step_block.cuh), where the ops in turn (six launches) also wrote and read back h2 and
// the logits.
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "core/phase_clock.cuh"
#include "engine/cuda/rollout_step.h"
#include "engine/cuda/rollout_step_block.cuh"

namespace grpo {

namespace {

using namespace rollout_step_detail;

// The step's kernel starts overlapped with the product before it (launch_overlapped), unrolled
// or in the WHILE loop's body: its blocks draw their dropout bits and load the parameters while
// the product runs, then wait for its a1, and let the next step's product start. In the loop its
// step comes from the counter, which the step before the product wrote (a kernel may read before
// its wait what the kernels before the previous one wrote: core/grid_dependency.cuh). Where the
// clocks are on, it marks its phases (StepMark) at step t.
struct AfterProduct : StepHooks {
  PhaseClocks clocks;
  uint32_t t;
  __device__ __forceinline__ void ready() const {
    wait_for_previous_kernel();
    phase_mark(clocks, t, kStepMarkA1);
    release_next_kernel();
  }
  __device__ __forceinline__ void mark_head() const { phase_mark(clocks, t, kStepMarkHead); }
  __device__ __forceinline__ void mark_game() const { phase_mark(clocks, t, kStepMarkGame); }
};
static_assert(kStepWarps == 4, "rollout_step.h's clocks check counts four warps");

// Blocks an SM, as the registers allow (__launch_bounds__). Every block of a step reads the same
// parameters (W_in transposed, LayerNorm's gamma and beta, fc1.bias, fc_out's rows: 128 KB at
// hidden 2048), which stay in L1 only where the SM keeps no more shared memory than these blocks
// use (prefer_l1).
constexpr unsigned kStepBlocksPerSm = 5;

// loop.counters == nullptr: step s.t, at s's pointers. Otherwise step counters[0], at rows
// t * N.. of s's step-0 pointers (rollout_step.h).
template <bool kVec>
__global__ void __launch_bounds__(kStepThreads, kStepBlocksPerSm)
    rollout_step_kernel(GameConfig cfg, Ops::RolloutStep s, RolloutLoop loop, int first_game, PhaseClocks clocks) {
  __shared__ StepScratch<4> sh;
  // Every thread reads the step before the block's first barrier, so by the time thread 0
  // reports the block done below, no thread of it reads the counter again.
  const uint32_t t = loop.counters ? loop.counters[0] : s.t;
  if (loop.counters && t >= loop.steps) {  // past the loop's steps: the condition is already false
    wait_for_previous_kernel();            // never end before the kernel before it (core/grid_dependency.cuh)
    return;
  }
  const size_t shift = loop.counters ? size_t(t) * unsigned(s.N) : 0;  // rows
  phase_mark(clocks, t, kStepMarkStart);
  const unsigned g = unsigned(first_game) + blockIdx.x;
  rollout_step_block<kVec>(cfg, s, s.p, *s.epoch, t, shift, g, s.obs_next == nullptr, sh,
                           s.now.a1 + (shift + g) * unsigned(s.H), AfterProduct{{}, clocks, t});
  phase_mark(clocks, t, kStepMarkEnd);
  if (loop.counters && threadIdx.x == 0) {
    __threadfence();  // this block's reads of the counter come before its arrival
    if (atomicAdd(&loop.counters[1], 1u) == gridDim.x - 1) {
      __threadfence();  // and every block's arrival before the counter moves
      atomicExch(&loop.counters[1], 0u);
      atomicExch(&loop.counters[0], t + 1);
      cudaGraphSetConditional(loop.cond, t + 1 < loop.steps);
    }
  }
}

// Step 0's start for game blockIdx.x (rollout_start_cuda): thread 0 resets the game, whose
// observation the trunk then reads from shared memory; the trunk as every step's.
template <bool kVec>
__global__ void __launch_bounds__(kStepThreads, kStepBlocksPerSm)
    rollout_start_kernel(GameConfig cfg, Ops::RolloutStep s, int replicas) {
  __shared__ StepScratch<4> sh;
  follow_previous_kernel();
  const unsigned g = blockIdx.x;
  if (threadIdx.x == 0) reset_one_game(cfg, s.games, int(g), replicas, s.seed, *s.epoch, s.obs_next, sh.obs);
  __syncthreads();
  with_kept_groups<4>(unsigned(s.H),
                      [&](auto kept) { step_trunk<kVec, kept.value>(s, s.p, g, sh, sh.h0, StepHooks{}); });
}

}  // namespace

void check_rollout_step_args(const GameConfig& game, const Ops::RolloutStep& s, const char* op) {
  const auto bad = [op](const std::string& what) { throw std::invalid_argument(std::string(op) + ": " + what); };
  if (s.H < kLayerNormMinN || s.H > kLayerNormMaxN) bad("hidden size " + std::to_string(s.H) + " outside [8, 8192]");
  if (s.D != game.obs_dim() || s.D > kMaxObs) bad("observation size " + std::to_string(s.D) + " is not the game's");
  if (s.N != s.games.n) bad("N = " + std::to_string(s.N) + " but " + std::to_string(s.games.n) + " games");
  if (s.epoch == nullptr) bad("needs the epoch counter");
  if (s.p.fc_in_w_t == nullptr || !aligned16(s.p.fc_in_w_t))
    bad("needs fc_in.weight transposed, 16-byte aligned (refresh_weight_copies)");
  check_dropout(DropoutSpec{s.dropout, s.seed, Purpose::DropoutRollout, s.epoch, s.t}, op);
  check_games_args(game, s.games);
}

namespace {
void launch_step(const GameConfig& game, const Ops::RolloutStep& s, const RolloutLoop& loop, GameRange games,
                 const PhaseClocks& clocks, cudaStream_t stream) {
  check_rollout_step_args(game, s, "rollout_step_cuda");
  if (clocks.at && (clocks.marks > kStepMarks || clocks.warps > unsigned(kStepWarps)))
    throw std::invalid_argument("rollout_step_cuda: phase clocks of " + std::to_string(clocks.marks) + " marks and " +
                                std::to_string(clocks.warps) + " warps; the kernel has " + std::to_string(kStepMarks) +
                                " and " + std::to_string(kStepWarps));
  const int count = games.count < 0 ? s.N - games.first : games.count;
  if (games.first < 0 || count < 0 || games.first > s.N - count)
    throw std::invalid_argument("rollout_step_cuda: games [" + std::to_string(games.first) + ", " +
                                std::to_string(games.first) + " + " + std::to_string(count) + ") outside the " +
                                std::to_string(s.N) + " games");
  if (count == 0) return;
  const auto kernel = rollout_step_vec(s) ? rollout_step_kernel<true> : rollout_step_kernel<false>;
  prefer_l1(reinterpret_cast<const void*>(kernel), kStepBlocksPerSm);
  launch_overlapped(kernel, dim3(unsigned(count)), dim3(kStepThreads), 0, stream, game, s, loop, games.first, clocks);
}
}  // namespace

void rollout_step_cuda(const GameConfig& game, const Ops::RolloutStep& s, cudaStream_t stream, GameRange games,
                       const PhaseClocks& clocks) {
  launch_step(game, s, RolloutLoop{nullptr, 0, 0}, games, clocks, stream);
}

void rollout_start_cuda(const GameConfig& game, const Ops::RolloutStep& s, int replicas, cudaStream_t stream) {
  check_rollout_step_args(game, s, "rollout_start_cuda");
  if (s.obs_next == nullptr) throw std::invalid_argument("rollout_start_cuda: needs step 0's observation rows");
  check_games_args(game, s.games, replicas < 1 ? -1 : replicas);  // groups() x replicas games, as games_reset_cuda
  if (s.N == 0) return;
  const auto kernel = rollout_step_vec(s) ? rollout_start_kernel<true> : rollout_start_kernel<false>;
  prefer_l1(reinterpret_cast<const void*>(kernel), kStepBlocksPerSm);
  launch_overlapped(kernel, dim3(unsigned(s.N)), dim3(kStepThreads), 0, stream, game, s, replicas);
}

void rollout_step_looped_cuda(const GameConfig& game, const Ops::RolloutStep& s, const RolloutLoop& loop,
                              cudaStream_t stream) {
  if (loop.counters == nullptr || s.obs_next == nullptr)
    throw std::invalid_argument("rollout_step_looped_cuda: needs the counters and a next step");
  // Without a kernel in the body nothing would clear the loop's condition: the GPU would spin.
  if (s.N == 0) throw std::invalid_argument("rollout_step_looped_cuda: needs at least one game");
  launch_step(game, s, loop, GameRange{}, PhaseClocks{}, stream);
}

}  // namespace grpo
