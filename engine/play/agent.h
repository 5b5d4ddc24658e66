// What plays a game outside training (grpo play, grpo eval): an Agent picks every game's action
// at each step from the games' states. The checkpoint's policy (policy_player.h) and the
// baselines (baseline_agents.h) are agents, so that they are played by the same loop
// (play_games.h), on the same games and draws.
#pragma once
#include <cstdint>
#include <vector>

#include "env/game_config.h"
#include "env/rules.h"

namespace grpo {

struct PlayOptions {
  int games = 1;
  int first_game = 0;    // global index of the first game (keys its draws): eval plays in chunks
  int max_steps = 1000;  // step cap per game
  bool greedy = false;   // policy: argmax of the logits instead of sampling
  float dropout = 0.f;   // policy: the reference plays in training mode (0.1); 0 is the usual evaluation
  uint64_t seed = 1;
};

class Agent {
 public:
  virtual ~Agent() = default;
  // Writes actions[i] in {0, 1, 2} (spec: left, stay, right) for games s[i], i < s.size(), at
  // step t. Game i's global index is opt.first_game + i: whatever an agent draws is keyed by it,
  // never by its place in a batch, so results do not depend on how the games are chunked.
  // Finished games are still passed (their actions are ignored), so that rows keep their keys.
  virtual void act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
                   int32_t* actions) = 0;
};

}  // namespace grpo
