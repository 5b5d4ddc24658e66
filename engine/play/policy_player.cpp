#include "engine/play/policy_player.h"

#include "engine/host/ops.h"
#include "engine/policy.h"
#include "env/games.h"
#include "kernels/policy_head.h"

namespace grpo {

namespace {
constexpr int kActs = 5;  // h0, h1, a1, h2 [rows, hidden] and the logits + LN statistics block
}

HostPolicy::HostPolicy(const Checkpoint& ck, int max_rows) : cfg_(ck.config), max_rows_(max_rows) {
  const ParamLayout l(cfg_.hidden_size, cfg_.obs_dim());
  params_.assign(ck.state.slabs.begin(), ck.state.slabs.begin() + std::ptrdiff_t(l.total));
  acts_.assign(size_t(max_rows) * cfg_.hidden_size * kActs, 0.f);
}

const float* HostPolicy::forward(const float* obs, int rows, float dropout, uint64_t seed, uint32_t step) {
  if (rows > max_rows_) throw std::invalid_argument("HostPolicy::forward: more rows than it was made for");
  const int H = cfg_.hidden_size;
  const ParamLayout l(H, cfg_.obs_dim());
  float* base = acts_.data();
  const size_t big = size_t(max_rows_) * H;
  // The last block holds the logits [rows, 3] and the LayerNorm mean and rstd [rows] each.
  PolicyActs a{base,
               base + big,
               base + 2 * big,
               base + 3 * big,
               base + 4 * big,
               base + 4 * big + 3 * size_t(max_rows_),
               base + 4 * big + 4 * size_t(max_rows_)};
  HostOps ops(cfg_.game, cfg_.batch_size);
  const DropoutSpec drop{dropout, seed, Purpose::DropoutRollout, &epoch_, step};
  policy_forward(ops, ParamViews::over(params_.data(), l), obs, rows, cfg_.obs_dim(), H, a, drop);
  return a.logits;
}

int32_t choose_action(const float* z, bool greedy, float u) {
  if (greedy) {
    int32_t best = 0;
    for (int32_t k = 1; k < kActions; ++k)
      if (z[k] > z[best]) best = k;
    return best;
  }
  return sample_from(policy_row(z), u);
}

std::vector<GameOutcome> play_games(const TrainConfig& cfg, HostPolicy& policy, const PlayOptions& opt,
                                    const std::function<void(int, const std::vector<GameState>&)>& on_step) {
  const GameConfig& g = cfg.game;
  const int n = opt.games, D = cfg.obs_dim();
  std::vector<GameState> s(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  std::vector<GameOutcome> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    s[i] = start_state((opt.first_game + i) % g.groups(),
                       start_fruit_x(g.screen_width, opt.seed, 0, uint32_t(opt.first_game + i)));
  std::vector<float> obs(size_t(n) * D);
  if (on_step) on_step(-1, s);
  int live = n;
  for (int t = 0; t < opt.max_steps && live > 0; ++t) {
    for (int i = 0; i < n; ++i) write_observation(g, s[i], obs.data() + size_t(i) * D);
    // Finished games stay in the batch (their rows are ignored): rows keep their dropout keys.
    const float* logits = policy.forward(obs.data(), n, opt.dropout, opt.seed, uint32_t(t));
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      const int32_t a = choose_action(logits + size_t(i) * kActions, opt.greedy,
                                      action_uniform(opt.seed, 0, uint32_t(t), uint32_t(opt.first_game + i)));
      s[i] = step(g, s[i], a,
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
