// `grpo eval --checkpoint F --games N`: plays N games with the checkpoint's policy on the host and
// reports the catch rate (caught / bottomed), mean score, win, loss and step-cap rates; --json
// prints one JSON object instead of text.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/play/policy_player.h"
#include "cli/commands.h"
#include "core/errors.h"

namespace grpo {

namespace {

struct EvalState {
  std::string checkpoint;
  PlayOptions opt;
  bool sampled = false, json = false;
  int win_score = 0, fail_score = 0;
};

// Games per host batch: bounds the activations (chunk x hidden x 5 floats) for large N.
constexpr int kChunk = 256;

int run_eval(CLI::App& app, EvalState st) {
  Checkpoint ck = load_checkpoint(st.checkpoint);
  if (app.count("--win-score")) ck.config.game.win_score = st.win_score;
  if (app.count("--fail-score")) ck.config.game.fail_score = st.fail_score;
  ck.config.game.validate();
  const int total = st.opt.games;
  HostPolicy policy(ck, std::min(total, kChunk));
  std::vector<GameOutcome> all;
  for (int first = 0; first < total; first += kChunk) {
    PlayOptions o = st.opt;
    o.first_game = first;
    o.games = std::min(kChunk, total - first);
    const std::vector<GameOutcome> part = play_games(ck.config.game, policy, o);
    all.insert(all.end(), part.begin(), part.end());
  }
  const EvalSummary r = summarize(all);
  const char* mode = st.opt.greedy ? "greedy" : "sampled";
  if (st.json) {
    nlohmann::ordered_json j = {{"checkpoint", st.checkpoint},
                                {"games", r.games},
                                {"policy", mode},
                                {"max_steps", st.opt.max_steps},
                                {"seed", st.opt.seed},
                                {"catch_rate", r.catch_rate},
                                {"mean_score", r.mean_score},
                                {"win_rate", r.win_rate},
                                {"loss_rate", r.loss_rate},
                                {"capped_rate", r.capped_rate},
                                {"mean_steps", r.mean_steps},
                                {"caught", r.caught},
                                {"bottomed", r.bottomed},
                                {"win_score", ck.config.game.win_score},
                                {"fail_score", ck.config.game.fail_score}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%d games, %s policy, step cap %d, win at %d, loss at %d\n", r.games, mode, st.opt.max_steps,
                ck.config.game.win_score, ck.config.game.fail_score);
    std::printf("catch rate   %.4f  (%lld of %lld fruits)\n", r.catch_rate, static_cast<long long>(r.caught),
                static_cast<long long>(r.bottomed));
    std::printf("mean score   %.3f\n", r.mean_score);
    std::printf("win rate     %.4f\nloss rate    %.4f\nstep cap     %.4f\nmean steps   %.1f\n", r.win_rate, r.loss_rate,
                r.capped_rate, r.mean_steps);
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto st = std::make_shared<EvalState>();
  CLI::App* sub = app.add_subcommand("eval", "evaluate a checkpoint's policy over many games");
  sub->add_option("--checkpoint", st->checkpoint, "a .safetensors checkpoint written by grpo train")->required();
  st->opt.games = 100;
  sub->add_option("--games", st->opt.games, "games to play")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  auto* greedy = sub->add_flag("--greedy", st->opt.greedy, "take the most likely action");
  auto* sampled = sub->add_flag("--sampled", st->sampled, "sample the action from the policy (the default)");
  greedy->excludes(sampled);
  sub->add_option("--max-steps", st->opt.max_steps, "step cap per game")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  sub->add_option("--dropout", st->opt.dropout, "dropout while playing (the reference plays with 0.1)")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  sub->add_option("--seed", st->opt.seed, "seed of the games' and the sampler's draws")->capture_default_str();
  sub->add_option("--win-score", st->win_score, "won at this score (default: the checkpoint's)");
  sub->add_option("--fail-score", st->fail_score, "lost at this score (default: the checkpoint's)");
  sub->add_flag("--json", st->json, "print one JSON object");
  return {sub, [sub, st] { return run_eval(*sub, *st); }};
}

}  // namespace grpo
