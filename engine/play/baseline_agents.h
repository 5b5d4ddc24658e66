// Baselines that a trained policy should beat (grpo eval --agent, --compare): they play on the
// game's state through the Agent interface (agent.h), so they meet exactly the games a policy does.
//
//   heuristic  always chases the lowest fruit: the active fruit with the largest y (nearest the
//              sprite's row H-1; ties go to the smallest slot), moving towards its x and staying
//              once above it; stays when no fruit is active. Deterministic.
//   random     left, stay or right with equal probability, from RandomAgent(seed, 0, t, game):
//              reproducible per seed and independent of the batch a game is played in.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/play/agent.h"

namespace grpo {

// The heuristic's action in state s (spec actions: 0 left, 1 stay, 2 right).
int32_t heuristic_action(const GameConfig& g, const GameState& s);
// The random agent's action for game `game` at step t.
int32_t random_action(uint64_t seed, uint32_t t, uint32_t game);

class HeuristicAgent : public Agent {
 public:
  void act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
           int32_t* actions) override;
};

class RandomAgent : public Agent {
 public:
  void act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
           int32_t* actions) override;
};

}  // namespace grpo
