// Host executor of the vectorised game, and the state block's layout (shared with the device).
#include <stdexcept>
#include <string>

#include "env/games.h"

namespace grpo {

namespace {
constexpr size_t kAlign = 256;
// A game step costs tens of nanoseconds: below this many games a parallel region's fork/join
// (and its spinning on a busy machine) costs more than it saves.
constexpr int kParallelGames = 16384;
size_t padded(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Games [g0, g1) one step each, the step's code chosen once a call (with_fruit_slots), not once a
// game, so the loop's body is one instantiation.
template <class Draws>
void step_games(const GameConfig& cfg, const GamesView& view, int g0, int g1, bool parallel, const int32_t* actions,
                const Draws& draws, uint32_t t, float* reward_out, float* obs_next) {
  with_fruit_slots(cfg, [&](auto slots) {
    using S = decltype(slots);
#pragma omp parallel for schedule(static) if (parallel)
    for (int g = g0; g < g1; ++g)
      step_one_game_slots<S>(cfg, view, g, actions[g], draws, t, reward_out, obs_next, nullptr);
  });
}
}  // namespace

void check_games_args(const GameConfig& cfg, const GamesView& v, int replicas) {
  if (v.max_fruits != cfg.max_fruits || v.n < 0)
    throw std::invalid_argument("games view built for max_fruits " + std::to_string(v.max_fruits) + ", config has " +
                                std::to_string(cfg.max_fruits));
  if (replicas != 0 && (replicas < 1 || v.n != cfg.groups() * replicas))
    throw std::invalid_argument("games_reset: view holds " + std::to_string(v.n) + " games, expected " +
                                std::to_string(cfg.groups()) + " groups x " + std::to_string(replicas));
}

size_t games_state_bytes(const GameConfig& cfg, int n_games) {
  const size_t word = padded(sizeof(int32_t) * static_cast<size_t>(n_games));
  return word * (2 + 2 * static_cast<size_t>(cfg.max_fruits) + 4);
}

GamesView make_games_view(const GameConfig& cfg, int n_games, void* block) {
  if (n_games < 0) throw std::invalid_argument("make_games_view: negative game count");
  const size_t word = padded(sizeof(int32_t) * static_cast<size_t>(n_games));
  auto* base = static_cast<unsigned char*>(block);
  size_t at = 0;
  auto take = [&](size_t arrays) {
    unsigned char* p = base + at;
    at += word * arrays;
    return p;
  };
  GamesView v;
  v.n = n_games;
  v.max_fruits = cfg.max_fruits;
  v.sprite_x = reinterpret_cast<int32_t*>(take(1));
  v.active = reinterpret_cast<uint32_t*>(take(1));
  v.fruit_x = reinterpret_cast<int32_t*>(take(cfg.max_fruits));
  v.fruit_y = reinterpret_cast<int32_t*>(take(cfg.max_fruits));
  v.score = reinterpret_cast<int32_t*>(take(1));
  v.steps = reinterpret_cast<int32_t*>(take(1));
  v.bottomed = reinterpret_cast<int32_t*>(take(1));
  v.caught = reinterpret_cast<int32_t*>(take(1));
  return v;
}

void games_reset_host(const GameConfig& cfg, const GamesView& view, int replicas, uint64_t seed, const uint32_t* epoch,
                      float* obs) {
  check_games_args(cfg, view, replicas < 1 ? -1 : replicas);
  const uint32_t e = *epoch;
#pragma omp parallel for schedule(static) if (view.n >= kParallelGames)
  for (int g = 0; g < view.n; ++g) reset_one_game(cfg, view, g, replicas, seed, e, obs);
}

void games_step_host(const GameConfig& cfg, const GamesView& view, const int32_t* actions, uint64_t seed,
                     const uint32_t* epoch, uint32_t t, float* reward_out, float* obs_next) {
  check_games_args(cfg, view);
  const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, seed, *epoch, t};
  step_games(cfg, view, 0, view.n, view.n >= kParallelGames, actions, draws, t, reward_out, obs_next);
}

void games_step_rows_host(const GameConfig& cfg, const GamesView& view, int g0, int g1, const int32_t* actions,
                          uint64_t seed, const uint32_t* epoch, uint32_t t, float* reward_out, float* obs_next) {
  check_games_args(cfg, view);
  if (g0 < 0 || g1 > view.n || g0 > g1) throw std::invalid_argument("games_step_rows_host: games out of range");
  const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, seed, *epoch, t};
  step_games(cfg, view, g0, g1, false, actions, draws, t, reward_out, obs_next);
}

void games_step_explicit_host(const GameConfig& cfg, const GamesView& view, const int32_t* actions, const float* coins,
                              const int32_t* spawn_x, uint32_t t, float* reward_out, float* obs_next) {
  check_games_args(cfg, view);
  const ExplicitDrawSource draws{cfg.max_fruits, coins, spawn_x};
  step_games(cfg, view, 0, view.n, view.n >= kParallelGames, actions, draws, t, reward_out, obs_next);
}

}  // namespace grpo
