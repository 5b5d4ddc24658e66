// `grpo eval`: plays N games with an agent on the host and reports the catch rate (caught /
// bottomed), mean score, win, loss and step-cap rates; --json prints one JSON object instead of text.
// The agent is a checkpoint's policy (--agent policy, the default) or a baseline (--agent heuristic
// or random, engine/play/baseline_agents.h); --compare B plays the policy and baseline B on the
// same games and prints them side by side. Every agent plays through play_games with the same
// seed, chunks and step cap, so their figures differ only by how they play.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/play/baseline_agents.h"
#include "engine/play/policy_player.h"
#include "cli/commands.h"
#include "cli/game_flags.h"
#include "core/errors.h"

namespace grpo {

namespace {

struct EvalState {
  std::string checkpoint, agent = "policy", compare;
  PlayOptions opt;
  bool sampled = false, json = false;
  GameConfig game;  // the game flags: the whole game without --checkpoint, else only win and fail
};

// Games per host batch: bounds the policy's activations (chunk x hidden x 5 floats) for large N.
constexpr int kChunk = 256;

// The flags that shape the game. A checkpoint's policy was trained on its own game (and its input
// size follows --max-fruits), so with --checkpoint they are refused rather than silently ignored.
constexpr const char* kGameShapeFlags[] = {"--screen-width", "--screen-height", "--sprite-width",
                                           "--max-fruits",   "--min-fruits",    "--min-interval-steps"};
// The flags that set how the policy plays: meaningless for a baseline alone.
constexpr const char* kPolicyFlags[] = {"--greedy", "--sampled", "--dropout"};

bool is_baseline(const std::string& a) { return a == "heuristic" || a == "random"; }

// Every refusal before any work (one line each, exit code 2 through UsageError).
void check_agent_flags(CLI::App& app, const EvalState& st) {
  const bool has_ckpt = app.count("--checkpoint") > 0;
  if (st.agent != "policy" && !is_baseline(st.agent))
    throw UsageError("--agent must be policy, heuristic or random (got \"" + st.agent + "\")");
  if (app.count("--compare")) {
    if (!is_baseline(st.compare))
      throw UsageError("--compare must be heuristic or random (got \"" + st.compare +
                       "\"): the checkpoint's policy is always the other column");
    if (!has_ckpt)
      throw UsageError("--compare needs --checkpoint F: it plays that checkpoint's policy beside the baseline");
    if (st.agent != "policy")
      throw UsageError("--compare plays the checkpoint's policy beside the baseline; drop --agent " + st.agent);
  }
  if (st.agent == "policy" && !has_ckpt)
    throw UsageError(
        "--agent policy (the default) needs --checkpoint F; --agent heuristic or --agent random plays without one");
  if (is_baseline(st.agent))
    for (const char* f : kPolicyFlags)
      if (app.count(f))
        throw UsageError(std::string(f) + " sets how a policy plays; --agent " + st.agent + " has none");
  if (has_ckpt)
    for (const char* f : kGameShapeFlags)
      if (app.count(f))
        throw UsageError(std::string(f) + " cannot change the game of --checkpoint (its policy was trained on it); " +
                         "give the game flags without --checkpoint");
}

std::unique_ptr<Agent> make_agent(const std::string& name, const std::optional<Checkpoint>& ck, int rows) {
  if (name == "heuristic") return std::make_unique<HeuristicAgent>();
  if (name == "random") return std::make_unique<RandomAgent>();
  return std::make_unique<HostPolicy>(*ck, rows);
}

EvalSummary evaluate(const GameConfig& g, Agent& agent, const PlayOptions& opt) {
  std::vector<GameOutcome> all;
  all.reserve(size_t(opt.games));
  for (int first = 0; first < opt.games; first += kChunk) {
    PlayOptions o = opt;
    o.first_game = first;
    o.games = std::min(kChunk, opt.games - first);
    const std::vector<GameOutcome> part = play_games(g, agent, o);
    all.insert(all.end(), part.begin(), part.end());
  }
  return summarize(all);
}

struct Column {
  std::string agent;  // policy, heuristic or random
  EvalSummary r;
};

// "sampled policy", "greedy policy", "heuristic agent", "random agent".
std::string label(const EvalState& st, const Column& c) {
  if (c.agent == "policy") return std::string(st.opt.greedy ? "greedy" : "sampled") + " policy";
  return c.agent + " agent";
}

nlohmann::ordered_json column_json(const EvalState& st, const GameConfig& g, const Column& c) {
  const EvalSummary& r = c.r;
  nlohmann::ordered_json j;
  j["agent"] = c.agent;
  j["checkpoint"] = st.checkpoint.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(st.checkpoint);
  j["games"] = r.games;
  if (c.agent == "policy") j["policy"] = st.opt.greedy ? "greedy" : "sampled";
  j["max_steps"] = st.opt.max_steps;
  j["seed"] = st.opt.seed;
  j["catch_rate"] = r.catch_rate;
  j["mean_score"] = r.mean_score;
  j["win_rate"] = r.win_rate;
  j["loss_rate"] = r.loss_rate;
  j["capped_rate"] = r.capped_rate;
  j["mean_steps"] = r.mean_steps;
  j["caught"] = r.caught;
  j["bottomed"] = r.bottomed;
  j["win_score"] = g.win_score;
  j["fail_score"] = g.fail_score;
  j["screen_width"] = g.screen_width;
  j["screen_height"] = g.screen_height;
  j["sprite_width"] = g.sprite_width;
  j["max_fruits"] = g.max_fruits;
  j["min_fruits"] = g.min_fruits;
  j["min_interval_steps"] = g.min_interval_steps;
  return j;
}

void print_one(const EvalState& st, const GameConfig& g, const Column& c) {
  const EvalSummary& r = c.r;
  std::printf("%d games, %s, step cap %d, win at %d, loss at %d\n", r.games, label(st, c).c_str(), st.opt.max_steps,
              g.win_score, g.fail_score);
  std::printf("catch rate   %.4f  (%lld of %lld fruits)\n", r.catch_rate, static_cast<long long>(r.caught),
              static_cast<long long>(r.bottomed));
  std::printf("mean score   %.3f\n", r.mean_score);
  std::printf("win rate     %.4f\nloss rate    %.4f\nstep cap     %.4f\nmean steps   %.1f\n", r.win_rate, r.loss_rate,
              r.capped_rate, r.mean_steps);
}

// One row per figure, one column per agent.
void print_table(const EvalState& st, const GameConfig& g, const std::vector<Column>& cols) {
  std::printf("%d games each, same games and seed %llu, step cap %d, win at %d, loss at %d\n", cols[0].r.games,
              static_cast<unsigned long long>(st.opt.seed), st.opt.max_steps, g.win_score, g.fail_score);
  std::printf("%-14s", "");
  for (const Column& c : cols) std::printf("  %18s", label(st, c).c_str());
  std::printf("\n");
  auto row = [&](const char* name, const char* fmt, double (*get)(const EvalSummary&)) {
    std::printf("%-14s", name);
    for (const Column& c : cols) std::printf(fmt, get(c.r));
    std::printf("\n");
  };
  row("catch rate", "  %18.4f", [](const EvalSummary& r) { return r.catch_rate; });
  row("mean score", "  %18.3f", [](const EvalSummary& r) { return r.mean_score; });
  row("win rate", "  %18.4f", [](const EvalSummary& r) { return r.win_rate; });
  row("loss rate", "  %18.4f", [](const EvalSummary& r) { return r.loss_rate; });
  row("step cap", "  %18.4f", [](const EvalSummary& r) { return r.capped_rate; });
  row("mean steps", "  %18.1f", [](const EvalSummary& r) { return r.mean_steps; });
  row("fruits caught", "  %18.0f", [](const EvalSummary& r) { return double(r.caught); });
  row("fruits down", "  %18.0f", [](const EvalSummary& r) { return double(r.bottomed); });
}

int run_eval(CLI::App& app, const EvalState& st) {
  check_agent_flags(app, st);
  std::optional<Checkpoint> ck;
  GameConfig g = st.game;
  if (app.count("--checkpoint")) {
    ck = load_checkpoint(st.checkpoint);
    g = ck->config.game;
    if (app.count("--win-score")) g.win_score = st.game.win_score;
    if (app.count("--fail-score")) g.fail_score = st.game.fail_score;
  }
  g.validate();
  std::vector<Column> cols{{st.agent, {}}};
  if (app.count("--compare")) cols.push_back({st.compare, {}});
  for (Column& c : cols) {
    const std::unique_ptr<Agent> agent = make_agent(c.agent, ck, std::min(st.opt.games, kChunk));
    c.r = evaluate(g, *agent, st.opt);
  }
  if (st.json) {
    nlohmann::ordered_json j;
    if (cols.size() == 1) {
      j = column_json(st, g, cols[0]);
    } else {
      for (const Column& c : cols) j[c.agent] = column_json(st, g, c);
    }
    std::printf("%s\n", j.dump().c_str());
  } else if (cols.size() == 1) {
    print_one(st, g, cols[0]);
  } else {
    print_table(st, g, cols);
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto st = std::make_shared<EvalState>();
  CLI::App* sub = app.add_subcommand("eval", "evaluate a checkpoint's policy, or a baseline agent, over many games");
  sub->add_option("--checkpoint", st->checkpoint, "a .safetensors checkpoint written by grpo train");
  sub->add_option("--agent", st->agent,
                  "who plays: policy (the checkpoint's, needs --checkpoint), heuristic (chases the lowest fruit) "
                  "or random (uniform actions)")
      ->capture_default_str();
  sub->add_option("--compare", st->compare,
                  "heuristic or random: also play this baseline on the same games and print both side by side "
                  "(needs --checkpoint)");
  st->opt.games = 100;
  sub->add_option("--games", st->opt.games, "games to play")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  auto* greedy = sub->add_flag("--greedy", st->opt.greedy, "policy: take the most likely action");
  auto* sampled = sub->add_flag("--sampled", st->sampled, "policy: sample the action (the default)");
  greedy->excludes(sampled);
  sub->add_option("--max-steps", st->opt.max_steps, "step cap per game")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  sub->add_option("--dropout", st->opt.dropout, "policy: dropout while playing (the reference plays with 0.1)")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  sub->add_option("--seed", st->opt.seed, "seed of the games' and the agents' draws")->capture_default_str();
  add_game_flags(*sub, st->game);
  sub->get_option("--win-score")->description("a game is won at this score (> 0; default: the checkpoint's, else 30)");
  sub->get_option("--fail-score")
      ->description("a game is lost at this score (< 0; default: the checkpoint's, else -30)");
  sub->add_flag("--json", st->json, "print one JSON object (with --compare: one entry per agent)");
  sub->footer(
      "The game: without --checkpoint, the game flags (grpo train's defaults); with it, the checkpoint's "
      "(only --win-score and --fail-score apply).");
  return {sub, [sub, st] { return run_eval(*sub, *st); }};
}

}  // namespace grpo
