// Games played to their end outside training (docs/spec/fruit_catcher.md "Play and evaluation"):
// won at the win score, lost at the fail score, or stopped at a step cap; and their summary.
//
// Randomness, keyed by --seed like everything else: game i starts in group i mod G with the
// start fruit drawn as StartFruit(seed, epoch 0, index i); step t's spawn draws are Spawn(seed,
// 0, t, i). Whatever the agent draws is keyed by (seed, t, i) too (agent.h). So every agent
// meets the same games, and `eval --games N` and `play` of game 0 see the same game 0.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/play/agent.h"

namespace grpo {

enum class GameEnd { Won, Lost, Capped };

struct GameOutcome {
  GameState final;
  GameEnd end;
};

// Plays opt.games games in lockstep, agent choosing the actions; calls on_step(t, states) after
// every step if given (play draws its frames there). Win and fail scores come from g.
std::vector<GameOutcome> play_games(const GameConfig& g, Agent& agent, const PlayOptions& opt,
                                    const std::function<void(int t, const std::vector<GameState>&)>& on_step = {});

struct EvalSummary {
  int games = 0;
  double catch_rate = 0;  // caught / bottomed over all games (0 when nothing bottomed)
  double mean_score = 0, win_rate = 0, loss_rate = 0, capped_rate = 0, mean_steps = 0;
  int64_t caught = 0, bottomed = 0;
};
EvalSummary summarize(const std::vector<GameOutcome>& outcomes);

}  // namespace grpo
