#include "engine/play/play_games.h"

#include <stdexcept>
#include <string>

#include "env/games.h"

namespace grpo {

std::vector<GameOutcome> play_games(const GameConfig& g, Agent& agent, const PlayOptions& opt,
                                    const std::function<void(int, const std::vector<GameState>&)>& on_step) {
  const int n = opt.games;
  std::vector<GameState> s(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  std::vector<GameOutcome> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    s[i] = start_state((opt.first_game + i) % g.groups(),
                       start_fruit_x(g.screen_width, opt.seed, 0, uint32_t(opt.first_game + i)));
  std::vector<int32_t> actions(static_cast<size_t>(n));
  if (on_step) on_step(-1, s);
  int live = n;
  for (int t = 0; t < opt.max_steps && live > 0; ++t) {
    agent.act(g, s, opt, uint32_t(t), actions.data());
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      // step() trusts its action; an agent's bug must not turn into a silent teleport.
      if (actions[i] < kLeft || actions[i] > kRight)
        throw std::logic_error("play_games: an agent chose action " + std::to_string(actions[i]));
      s[i] = step(g, s[i], actions[i],
                  spawn_draws(g.screen_width, g.max_fruits, opt.seed, 0, uint32_t(t), uint32_t(opt.first_game + i)))
                 .state;
      const bool won = s[i].score >= g.win_score, lost = s[i].score <= g.fail_score;
      if (won || lost || t + 1 == opt.max_steps) {
        done[i] = true;
        --live;
        out[i] = {s[i], won ? GameEnd::Won : lost ? GameEnd::Lost : GameEnd::Capped};
      }
    }
    if (on_step) on_step(t, s);
  }
  return out;
}

EvalSummary summarize(const std::vector<GameOutcome>& outcomes) {
  EvalSummary r;
  r.games = int(outcomes.size());
  if (r.games == 0) return r;
  double score = 0, steps = 0;
  int won = 0, lost = 0, capped = 0;
  for (const GameOutcome& o : outcomes) {
    r.caught += o.final.caught;
    r.bottomed += o.final.bottomed;
    score += o.final.score;
    steps += o.final.steps;
    won += o.end == GameEnd::Won;
    lost += o.end == GameEnd::Lost;
    capped += o.end == GameEnd::Capped;
  }
  r.catch_rate = r.bottomed > 0 ? double(r.caught) / double(r.bottomed) : 0.0;
  r.mean_score = score / r.games;
  r.mean_steps = steps / r.games;
  r.win_rate = double(won) / r.games;
  r.loss_rate = double(lost) / r.games;
  r.capped_rate = double(capped) / r.games;
  return r;
}

}  // namespace grpo
