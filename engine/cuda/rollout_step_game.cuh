// The fused rollout step's shared scratch and its game part (rollout_step_block.cuh is the rest:
// the head and the next step's trunk): thread 0's policy and game step, the random numbers it
// draws before the block's wait for a1, and the game's step played ahead for each action, whose
// sampled outcome warp 0 takes. Device code only, for .cu files.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/async_copy.cuh"
#include "engine/ops.h"
#include "env/games.h"
#include "kernels/policy_head.h"

namespace grpo::rollout_step_detail {

constexpr int kStepThreads = 128;
constexpr int kStepWarps = kStepThreads / 32;
constexpr int kMaxObs = 32;

// The game's step for one action, played ahead (StepHooks::kGameAhead): the state after it, the
// step's reward and, but at the last step, the observation.
struct GameAhead {
  GameState state;
  float reward;
  float obs[kMaxObs];
};

// The block's shared scratch, a __shared__ variable of the calling kernel.
struct StepShared {
  float head_sums[kActions][kStepWarps];
  float welford[3 * kStepWarps];
  float obs[kMaxObs];
  // A kernel plays its games ahead (the cluster kernel's) or stages their states (the stepwise
  // kernel's), never both (rollout_step_block): the two share their bytes.
  union {
    GameAhead ahead[kActions];              // kGameAhead: action a's on lane 0 of warp a + 1
    uint32_t state_words[kGameStateWords];  // kStageGame: the game's state, a word a lane of warp 0
  };
};

// Lane w of warp 0, before the head (StepHooks::kStageGame): word w of game g's state copied into
// sh.state_words without waiting for it (async_copy4: no register held through the head, which
// has none to spare at the reference); the lane waits for it after the head, before the head's
// barrier, so that thread 0's game reads its state from shared memory and the state's round trip
// to L2 runs under the head's. Read before hooks.ready(): the states were written by the kernel
// before the product, which a kernel may read before its wait (core/grid_dependency.cuh).
template <class Games>
__device__ inline void stage_state_word(const GameConfig& cfg, const Games& games, unsigned g, unsigned w,
                                        StepShared& sh) {
  with_fruit_slots(cfg, [&](auto slots) {
    const uint32_t* word = games.template word_address<decltype(slots)>(int(g), w);
    if (word)
      async_copy4(&sh.state_words[w], word);
    else
      sh.state_words[w] = 0u;
  });
}

// Game g's state as staged in sh.state_words, stored to where it lives (step_one_game's Games).
template <class Games>
struct StagedGame {
  const uint32_t* words;
  const Games& games;
  template <class S>
  __device__ GameState load(int) const {
    GameState st;
    memcpy(&st, words, sizeof st);
    return st;
  }
  template <class S>
  __device__ void store(int g, const GameState& st) const {
    games.template store<S>(g, st);
  }
};

// The random numbers thread 0's game step takes, drawn before hooks.ready() (they need no a1):
// there they run while the block waits for a1 (the cluster kernel's mailbox, the product's end)
// instead of after the head, on the path of the game that the other warps wait for.
// (With the game played ahead, thread 0 draws the action's uniform alone.)
struct GameDraws {
  float action_u = 0.f;  // action_uniform's
  Bits4 spawn{};         // spawn_block0's
  GameDraws() = default;
  __device__ GameDraws(uint64_t seed, uint32_t epoch, uint32_t t, unsigned g, bool spawn_too)
      : action_u(action_uniform(seed, epoch, t, uint32_t(g))),
        spawn(spawn_too ? spawn_block0(seed, epoch, t, uint32_t(g)) : Bits4{}) {}
};

// Lane 0 of warp a + 1: game g's step t with action a from its state now, into sh.ahead[a]
// (StepHooks::kGameAhead). The same function of the same state and draws as step_one_game's.
template <class Games>
__device__ inline void play_ahead(const GameConfig& cfg, const Ops::RolloutStep& s, const Games& games, uint32_t epoch,
                                  uint32_t t, unsigned g, bool last, int32_t a, GameAhead& out) {
  with_fruit_slots(cfg, [&](auto slots) {
    using S = decltype(slots);
    const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, s.seed, epoch, t};
    out.state = play_step<S>(cfg, games.template load<S>(int(g)), int(g), a, draws, t, &out.reward);
    if (!last) write_observation<S>(cfg, out.state, out.obs);
  });
}

// Thread 0, after the head's barrier: the logits and the sampled action, both also to global
// memory.
__device__ inline int32_t step_policy(const Ops::RolloutStep& s, const float (&b_out)[kActions], const GameDraws& drawn,
                                      size_t shift, unsigned g, const StepShared& sh) {
  const size_t row = shift + g;
  float logits[kActions];
#pragma unroll
  for (int a = 0; a < kActions; ++a) {
    float sum = sh.head_sums[a][0];
    for (int w = 1; w < kStepWarps; ++w) sum += sh.head_sums[a][w];
    logits[a] = sum + b_out[a];
    s.now.logits[row * kActions + a] = logits[a];
  }
  const int32_t action = sample_from(policy_row(logits), drawn.action_u);
  s.actions[row] = action;
  return action;
}

template <class Games>
constexpr bool kIsStagedGame = false;
template <class Games>
constexpr bool kIsStagedGame<StagedGame<Games>> = true;

// Thread 0, after the head's barrier: the policy, then the game's step, its observation also
// into sh.obs, for the trunk. games: where the game's state is (StepHooks::games, or its
// StagedGame).
template <class Games>
__device__ inline void step_game(const GameConfig& cfg, const Ops::RolloutStep& s, const Games& games,
                                 const float (&b_out)[kActions], const GameDraws& drawn, uint32_t epoch, uint32_t t,
                                 size_t shift, unsigned g, bool last, StepShared& sh) {
  const int32_t action = step_policy(s, b_out, drawn, shift, g, sh);
  float* obs_next = last ? nullptr : s.obs_next + shift * s.D;
  const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, s.seed, epoch, t, &drawn.spawn};
  float* obs_copy = obs_next ? sh.obs : nullptr;
  // With the state staged, the action goes by value: reading it back would be the game's one
  // round trip left. Elsewhere (the cluster kernel's later games of a block) it is read back: held
  // in a register through the game, it cost the cluster kernel's bf16 compilation six registers.
  if constexpr (kIsStagedGame<Games>)
    step_one_game(cfg, games, int(g), action, draws, t, s.rewards + shift, obs_next, obs_copy);
  else
    step_one_game(cfg, games, int(g), s.actions + shift, draws, t, s.rewards + shift, obs_next, obs_copy);
}

// Warp 0, after the head's barrier, where the game's step was played ahead for each action
// (StepHooks::kGameAhead): thread 0 samples the action, then the warp's lanes take its outcome
// at once, a word or an observation element a lane (games.store_by_lanes): one thread's copies
// of the state, the reward and the D observation elements would be ~50 instructions on the path
// that every other warp waits for.
template <class Games>
__device__ inline void take_played_ahead(const Ops::RolloutStep& s, const Games& games, const float (&b_out)[kActions],
                                         const GameDraws& drawn, size_t shift, unsigned g, bool last, StepShared& sh) {
  const unsigned lane = threadIdx.x % 32;
  int32_t action = 0;
  if (lane == 0) action = step_policy(s, b_out, drawn, shift, g, sh);
  action = __shfl_sync(0xFFFFFFFFu, action, 0);
  const GameAhead& o = sh.ahead[action];
  games.store_by_lanes(int(g), o.state, lane);
  if (lane == 0) s.rewards[shift + g] = o.reward;
  if (!last && lane < unsigned(s.D)) {
    const float v = o.obs[lane];
    sh.obs[lane] = v;
    s.obs_next[(shift + g) * size_t(s.D) + lane] = v;
  }
}

}  // namespace grpo::rollout_step_detail
