// N games at once: their state in one memory block laid out as a structure of arrays (one
// thread per game reads consecutive words: coalesced), with the same functions on the host
// executor (games_host.cpp) and on the device (games.cu), both in grpo_env.
//
// Layout of the block for n games (every array starts on a 256-byte boundary relative to the
// block's start, so a cudaMalloc'd block keeps them all aligned):
//   int32  sprite_x[n]
//   uint32 active[n]                 bit i = slot i active
//   int32  fruit_x[max_fruits][n]    slot-major: fruit_x[i * n + game]
//   int32  fruit_y[max_fruits][n]
//   int32  score[n], steps[n], bottomed[n], caught[n]
// The layout holds no pointers, so a block copied between host and device stays valid.
//
// Games are numbered game = group * replicas + replica, group in [0, W-3).
//
// Random draws (core/rng.h, seed = the run's seed, epoch read through a pointer: on the device
// it is a DEVICE pointer, read by the kernel, so a replayed CUDA graph draws fresh numbers):
//   start fruit x of group g:  bits_to_index(draw4(seed, StartFruit, epoch, 0, g, 0).x, W)
//   step t of game k: words w_0, w_1, ... where w_{4b+c} = component c (x, y, z, w) of
//     draw4(seed, Spawn, epoch, t, k, b); coin = bits_to_uniform(w_0),
//     spawn x'_j = bits_to_index(w_{j+1}, W) for j < max_fruits. Blocks b = 0 .. max_fruits/4
//     (one block for the default max_fruits = 3).
#pragma once
#include <cstddef>
#include <cstdint>

#include "env/game_config.h"
#include "env/rules.h"
#include "core/host_device.h"
#include "core/rng.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

struct GamesView {
  int n = 0;           // games
  int max_fruits = 0;  // slots per game (stride of fruit_x / fruit_y is n)
  int32_t* sprite_x = nullptr;
  uint32_t* active = nullptr;
  int32_t* fruit_x = nullptr;
  int32_t* fruit_y = nullptr;
  int32_t* score = nullptr;
  int32_t* steps = nullptr;
  int32_t* bottomed = nullptr;
  int32_t* caught = nullptr;

  // S (Slots, env/rules.h): the slots to read; Slots<N> only where max_fruits is N.
  template <class S = AnySlots>
  GRPO_HD GameState load(int g) const {
    GameState s;
    s.sprite_x = sprite_x[g];
    s.active = active[g];
    GRPO_UNROLL
    for (int i = 0; i < kMaxFruitSlots; ++i) {
      const bool here = i < S::fruits(max_fruits);
      s.fruit_x[i] = here ? fruit_x[static_cast<size_t>(i) * n + g] : 0;
      s.fruit_y[i] = here ? fruit_y[static_cast<size_t>(i) * n + g] : 0;
    }
    s.score = score[g];
    s.steps = steps[g];
    s.bottomed = bottomed[g];
    s.caught = caught[g];
    return s;
  }
  // Where word w of load<S>(g) is (GameState as 32-bit words, kGameStateWords of them): null for
  // a fruit slot past S's, which load<S> reads as 0. A lane a word, where a warp's lanes copy one
  // state together.
  template <class S = AnySlots>
  GRPO_HD const uint32_t* word_address(int g, unsigned w) const {
    constexpr unsigned kFruitX = offsetof(GameState, fruit_x) / 4, kFruitY = offsetof(GameState, fruit_y) / 4;
    constexpr unsigned kScore = offsetof(GameState, score) / 4;
    const auto word = [](const int32_t* p) { return reinterpret_cast<const uint32_t*>(p); };
    const auto slot = [&](const int32_t* slots, unsigned i) {
      return int(i) < S::fruits(max_fruits) ? word(slots + static_cast<size_t>(i) * n + g) : nullptr;
    };
    if (w == offsetof(GameState, sprite_x) / 4) return word(sprite_x + g);
    if (w == offsetof(GameState, active) / 4) return active + g;
    if (w >= kFruitX && w < kFruitX + kMaxFruitSlots) return slot(fruit_x, w - kFruitX);
    if (w >= kFruitY && w < kFruitY + kMaxFruitSlots) return slot(fruit_y, w - kFruitY);
    switch (w - kScore) {  // a switch, not an array a thread would index in local memory
      case 0:
        return word(score + g);
      case 1:
        return word(steps + g);
      case 2:
        return word(bottomed + g);
      default:
        return word(caught + g);
    }
  }
  template <class S = AnySlots>
  GRPO_HD void store(int g, const GameState& s) const {
    sprite_x[g] = s.sprite_x;
    active[g] = s.active;
    GRPO_UNROLL
    for (int i = 0; i < S::kLoop; ++i) {
      if (i >= S::fruits(max_fruits)) continue;
      fruit_x[static_cast<size_t>(i) * n + g] = s.fruit_x[i];
      fruit_y[static_cast<size_t>(i) * n + g] = s.fruit_y[i];
    }
    score[g] = s.score;
    steps[g] = s.steps;
    bottomed[g] = s.bottomed;
    caught[g] = s.caught;
  }
};

constexpr unsigned kGameStateWords = sizeof(GameState) / sizeof(uint32_t);
static_assert(sizeof(GameState) % sizeof(uint32_t) == 0 && offsetof(GameState, sprite_x) == 0 &&
                  offsetof(GameState, active) == 4 && offsetof(GameState, fruit_x) == 8 &&
                  offsetof(GameState, fruit_y) == offsetof(GameState, fruit_x) + 4 * kMaxFruitSlots &&
                  offsetof(GameState, score) == offsetof(GameState, fruit_y) + 4 * kMaxFruitSlots &&
                  offsetof(GameState, caught) == offsetof(GameState, score) + 12 && kGameStateWords == 22,
              "GamesView::word_address's words: GameState's fields in order, 32 bits each");

// Bytes of the state block for n games (a multiple of 256).
size_t games_state_bytes(const GameConfig& cfg, int n_games);
// A view over a block of games_state_bytes(cfg, n_games) bytes at `block` (host or device memory:
// only pointer arithmetic happens here). The block needs 4-byte alignment; 256 is best.
GamesView make_games_view(const GameConfig& cfg, int n_games, void* block);

// The first Philox block of game `game`'s spawn draws at step t (words w_0 .. w_3: the coin and
// the first three spawn x), which spawn_draws takes from its caller where one drew it ahead.
GRPO_HD Bits4 spawn_block0(uint64_t seed, uint32_t epoch, uint32_t t, uint32_t game) {
  return draw4(seed, Purpose::Spawn, epoch, t, game, 0);
}

// Draws for game `game` at step t, from the mapping above. S (Slots): Slots<N> only where
// max_fruits is N; spawn_x[j] past S::kLoop is 0. block0: spawn_block0(seed, epoch, t, game)
// when the caller drew it already, else null.
template <class S = AnySlots>
GRPO_HD StepDraws spawn_draws(int screen_width, int max_fruits, uint64_t seed, uint32_t epoch, uint32_t t,
                              uint32_t game, const Bits4* block0 = nullptr) {
  constexpr int kBlocks = (S::kLoop + 1 + 3) / 4;  // of four words: w_0 .. w_{kLoop}
  const int fruits = S::fruits(max_fruits);
  StepDraws d;
  uint32_t w[4 * kBlocks];
  GRPO_UNROLL
  for (int b = 0; b < kBlocks; ++b) {
    if (4 * b > fruits) {  // words 4b.. are not needed: w_{max_fruits} is the last one read
      w[4 * b] = w[4 * b + 1] = w[4 * b + 2] = w[4 * b + 3] = 0;
      continue;
    }
    const Bits4 r = b == 0 ? (block0 ? *block0 : spawn_block0(seed, epoch, t, game))
                           : draw4(seed, Purpose::Spawn, epoch, t, game, b);
    w[4 * b] = r.x;
    w[4 * b + 1] = r.y;
    w[4 * b + 2] = r.z;
    w[4 * b + 3] = r.w;
  }
  d.coin = bits_to_uniform(w[0]);
  GRPO_UNROLL
  for (int j = 0; j < kMaxFruitSlots; ++j)
    d.spawn_x[j] =
        j < S::kLoop ? static_cast<int32_t>(bits_to_index(w[j + 1], static_cast<uint32_t>(screen_width))) : 0;
  return d;
}

GRPO_HD int32_t start_fruit_x(int screen_width, uint64_t seed, uint32_t epoch, uint32_t group) {
  return static_cast<int32_t>(
      bits_to_index(draw4(seed, Purpose::StartFruit, epoch, 0, group, 0).x, static_cast<uint32_t>(screen_width)));
}

// Where a step's draws come from: the Philox streams above, or explicit arrays (the
// conformance interface): coins[n], spawn_x[n * max_fruits] (row-major per game). get<S>(g):
// game g's, for a step compiled for S (Slots).
struct PhiloxDrawSource {
  int screen_width, max_fruits;
  uint64_t seed;
  uint32_t epoch, t;
  const Bits4* block0 = nullptr;  // the game's spawn_block0, where the caller drew it ahead
  template <class S = AnySlots>
  GRPO_HD StepDraws get(int g) const {
    return spawn_draws<S>(screen_width, max_fruits, seed, epoch, t, static_cast<uint32_t>(g), block0);
  }
};
struct ExplicitDrawSource {
  int max_fruits;
  const float* coins;
  const int32_t* spawn_x;
  template <class S = AnySlots>
  GRPO_HD StepDraws get(int g) const {
    StepDraws d;
    d.coin = coins[g];
    GRPO_UNROLL
    for (int j = 0; j < kMaxFruitSlots; ++j)
      d.spawn_x[j] = j < S::fruits(max_fruits) ? spawn_x[static_cast<size_t>(g) * max_fruits + j] : 0;
    return d;
  }
};

// Game g's step t from state st with `action`: the state after it, and the step's reward in
// *reward. S: Slots.
template <class S, class Draws>
GRPO_HD GameState play_step(const GameConfig& cfg, const GameState& st, int g, int32_t action, const Draws& draws,
                            uint32_t t, float* reward) {
  const GameState after = step<S>(cfg, st, action, draws.template get<S>(g)).state;
  *reward = step_reward(t, st.score, after);
  return after;
}

// The step of one game whose state the caller holds (st, updated): reward_out[g] and, when not
// null, its observation row in obs_next and a copy in obs_copy. S: Slots.
template <class S, class Draws>
GRPO_HD void advance_game(const GameConfig& cfg, GameState& st, int g, int32_t action, const Draws& draws, uint32_t t,
                          float* reward_out, float* obs_next, float* obs_copy) {
  st = play_step<S>(cfg, st, g, action, draws, t, &reward_out[g]);
  if (obs_next) write_observation<S>(cfg, st, obs_next + static_cast<size_t>(g) * cfg.obs_dim());
  if (obs_copy) write_observation<S>(cfg, st, obs_copy);
}

// f(Slots<3>{}) for the default game's three fruit slots, else f(AnySlots{}).
template <class F>
GRPO_HD void with_fruit_slots(const GameConfig& cfg, const F& f) {
  if (cfg.max_fruits == kDefaultFruits)
    f(Slots<kDefaultFruits>{});
  else
    f(AnySlots{});
}

// Game g: one step with `action`, reward[g], and (when obs_next is not null) its observation
// row; obs_copy, when not null, gets the observation too (the fused rollout step's shared
// memory, which the next step's fc_in reads). The body of both the step kernel and the host loop,
// compiled for S (Slots). games: where the states are, a GamesView or anything with its
// load<S>(g) and store<S>(g, st) (the cluster rollout keeps its games' states on chip).
template <class S, class Games, class Draws>
GRPO_HD void step_one_game_slots(const GameConfig& cfg, const Games& games, int g, int32_t action, const Draws& draws,
                                 uint32_t t, float* reward_out, float* obs_next, float* obs_copy) {
  GameState st = games.template load<S>(g);
  advance_game<S>(cfg, st, g, action, draws, t, reward_out, obs_next, obs_copy);
  games.template store<S>(g, st);
}
// The same for any slot count, the default three compiled apart (with_fruit_slots).
template <class Games, class Draws>
GRPO_HD void step_one_game(const GameConfig& cfg, const Games& games, int g, int32_t action, const Draws& draws,
                           uint32_t t, float* reward_out, float* obs_next, float* obs_copy = nullptr) {
  with_fruit_slots(cfg, [&](auto slots) {
    step_one_game_slots<decltype(slots)>(cfg, games, g, action, draws, t, reward_out, obs_next, obs_copy);
  });
}
// The same with game g's action read from actions[g] (the step kernels, the host loop); a caller
// that holds the action (the fused rollout step's thread 0, which has just sampled it) passes it.
template <class Games, class Draws>
GRPO_HD void step_one_game(const GameConfig& cfg, const Games& games, int g, const int32_t* actions, const Draws& draws,
                           uint32_t t, float* reward_out, float* obs_next, float* obs_copy = nullptr) {
  step_one_game(cfg, games, g, actions[g], draws, t, reward_out, obs_next, obs_copy);
}

// Game g of a reset: group g / replicas, start fruit x from that group's draw; its observation
// row in obs and, when not null, a copy in obs_copy (as step_one_game's).
GRPO_HD void reset_one_game(const GameConfig& cfg, const GamesView& v, int g, int replicas, uint64_t seed,
                            uint32_t epoch, float* obs, float* obs_copy = nullptr) {
  const int group = g / replicas;
  const GameState s = start_state(group, start_fruit_x(cfg.screen_width, seed, epoch, static_cast<uint32_t>(group)));
  v.store(g, s);
  if (obs) write_observation(cfg, s, obs + static_cast<size_t>(g) * cfg.obs_dim());
  if (obs_copy) write_observation(cfg, s, obs_copy);
}

// Throws std::invalid_argument unless `view` was made for cfg and, for a reset (replicas > 0),
// holds cfg.groups() * replicas games. Both executors call it before any work.
void check_games_args(const GameConfig& cfg, const GamesView& view, int replicas = 0);

// ---- Host executor. view.n must be cfg.groups() * replicas for a reset. ----
// Starts every game of an epoch; writes the n x obs_dim observations (row-major) to obs.
void games_reset_host(const GameConfig& cfg, const GamesView& view, int replicas, uint64_t seed, const uint32_t* epoch,
                      float* obs);
// Steps every game with actions[g] in {0, 1, 2} and the Philox draws of step t; writes reward[g]
// (t == 0: the first-step formula) and, if obs_next is not null, the observations after the step.
void games_step_host(const GameConfig& cfg, const GamesView& view, const int32_t* actions, uint64_t seed,
                     const uint32_t* epoch, uint32_t t, float* reward, float* obs_next);
// games_step_host on games [g0, g1) only, on the calling thread (the host rollout runs groups of
// games on different threads; each game's draws depend on its index, not on the group).
void games_step_rows_host(const GameConfig& cfg, const GamesView& view, int g0, int g1, const int32_t* actions,
                          uint64_t seed, const uint32_t* epoch, uint32_t t, float* reward, float* obs_next);
// The same with explicit draws: coins[n], spawn_x[n * max_fruits].
void games_step_explicit_host(const GameConfig& cfg, const GamesView& view, const int32_t* actions, const float* coins,
                              const int32_t* spawn_x, uint32_t t, float* reward, float* obs_next);

#if defined(GRPO_HAVE_CUDA)
// ---- Device executor (env/games.cu): the same contracts, one thread per game, every
// pointer a device pointer (epoch included), asynchronous on `stream`, capturable in a graph.
void games_reset_cuda(const GameConfig& cfg, const GamesView& view, int replicas, uint64_t seed, const uint32_t* epoch,
                      float* obs, cudaStream_t stream = nullptr);
void games_step_cuda(const GameConfig& cfg, const GamesView& view, const int32_t* actions, uint64_t seed,
                     const uint32_t* epoch, uint32_t t, float* reward, float* obs_next, cudaStream_t stream = nullptr);
void games_step_explicit_cuda(const GameConfig& cfg, const GamesView& view, const int32_t* actions, const float* coins,
                              const int32_t* spawn_x, uint32_t t, float* reward, float* obs_next,
                              cudaStream_t stream = nullptr);
#endif

}  // namespace grpo
