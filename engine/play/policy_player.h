// Playing a checkpoint's policy on the host (grpo play, grpo eval): the network's forward pass
// through HostOps and policy_forward, and games that end on win, loss or a step cap
// (docs/spec/fruit_catcher.md "Play and evaluation").
//
// Randomness, keyed by --seed like everything else: game i starts in group i mod G with the
// start fruit drawn as StartFruit(seed, epoch 0, index i); step t's spawn draws are Spawn(seed,
// 0, t, i); a sampled action uses Action(seed, 0, t, i); dropout (off unless asked) uses
// DropoutRollout(seed, 0, t). So `eval --games N` and `play` of game 0 see the same game 0.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "env/rules.h"

namespace grpo {

struct PlayOptions {
  int games = 1;
  int first_game = 0;    // global index of the first game (keys its draws): eval plays in chunks
  int max_steps = 1000;  // step cap per game
  bool greedy = false;   // argmax of the logits instead of sampling
  float dropout = 0.f;   // the reference plays in training mode (0.1); 0 is the usual evaluation
  uint64_t seed = 1;
};

// The policy of a checkpoint, evaluated on the host for up to `max_rows` observations at once.
class HostPolicy {
 public:
  HostPolicy(const Checkpoint& ck, int max_rows);
  // logits [rows, 3] for observations obs [rows, obs_dim]; dropout keyed by (seed, step).
  const float* forward(const float* obs, int rows, float dropout, uint64_t seed, uint32_t step);

 private:
  TrainConfig cfg_;
  std::vector<float> params_, acts_;
  int max_rows_;
  uint32_t epoch_ = 0;
};

// One action from one row of logits: argmax (first on ties) or an inverse-CDF sample with u.
int32_t choose_action(const float* logits, bool greedy, float u);

enum class GameEnd { Won, Lost, Capped };

struct GameOutcome {
  GameState final;
  GameEnd end;
};

// Plays opt.games games in lockstep; calls on_step(t, states) after every step if given (play
// draws its frames there). Win and fail scores come from cfg.game.
std::vector<GameOutcome> play_games(const TrainConfig& cfg, HostPolicy& policy, const PlayOptions& opt,
                                    const std::function<void(int t, const std::vector<GameState>&)>& on_step = {});

struct EvalSummary {
  int games = 0;
  double catch_rate = 0;  // caught / bottomed over all games (0 when nothing bottomed)
  double mean_score = 0, win_rate = 0, loss_rate = 0, capped_rate = 0, mean_steps = 0;
  int64_t caught = 0, bottomed = 0;
};
EvalSummary summarize(const std::vector<GameOutcome>& outcomes);

}  // namespace grpo
