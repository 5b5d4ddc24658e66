#include "engine/play/baseline_agents.h"

#include <cstddef>

#include "core/rng.h"

namespace grpo {

int32_t heuristic_action(const GameConfig& g, const GameState& s) {
  int target = -1;
  for (int i = 0; i < g.max_fruits; ++i)
    if (slot_active(s, i) && (target < 0 || s.fruit_y[i] > s.fruit_y[target])) target = i;
  if (target < 0) return kStay;
  const int32_t x = s.fruit_x[target];
  return x < s.sprite_x ? kLeft : x > s.sprite_x ? kRight : kStay;
}

int32_t random_action(uint64_t seed, uint32_t t, uint32_t game) {
  return int32_t(bits_to_index(draw4(seed, Purpose::RandomAgent, 0, t, game).x, 3));
}

void HeuristicAgent::act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions&, uint32_t,
                         int32_t* actions) {
  for (size_t i = 0; i < s.size(); ++i) actions[i] = heuristic_action(g, s[i]);
}

void RandomAgent::act(const GameConfig&, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
                      int32_t* actions) {
  for (size_t i = 0; i < s.size(); ++i) actions[i] = random_action(opt.seed, t, uint32_t(opt.first_game) + uint32_t(i));
}

}  // namespace grpo
