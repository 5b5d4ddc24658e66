// Playing a checkpoint's policy on the host (grpo play, grpo eval): the network's forward pass
// through HostOps and policy_forward, as an Agent (agent.h) that play_games plays.
//
// Randomness beyond the games' (play_games.h): a sampled action of game i at step t uses
// Action(seed, 0, t, i); dropout (off unless asked) uses DropoutRollout(seed, 0, t).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/play/agent.h"
#include "engine/play/play_games.h"

namespace grpo {

// The policy of a checkpoint, evaluated on the host for up to `max_rows` observations at once.
class HostPolicy : public Agent {
 public:
  HostPolicy(const Checkpoint& ck, int max_rows);
  // logits [rows, 3] for observations obs [rows, obs_dim]; dropout keyed by (seed, step).
  const float* forward(const float* obs, int rows, float dropout, uint64_t seed, uint32_t step);
  // The observations of s through forward, then choose_action per game (opt.greedy, opt.dropout).
  void act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
           int32_t* actions) override;

 private:
  TrainConfig cfg_;
  std::vector<float> params_, acts_, obs_;
  int max_rows_;
  uint32_t epoch_ = 0;
};

// One action from one row of logits: argmax (first on ties) or an inverse-CDF sample with u.
int32_t choose_action(const float* logits, bool greedy, float u);

}  // namespace grpo
