// `grpo play --checkpoint F`: one game of the checkpoint's policy, drawn in the terminal with
// ANSI escapes (a frame per step, --fps frames per second), ending on a win, a loss or the step
// cap with a one-line summary. The policy runs on the host (engine/play/policy_player.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "engine/play/policy_player.h"
#include "cli/commands.h"
#include "core/errors.h"

namespace grpo {

namespace {

// Largest screen play draws: every frame prints each cell, so a larger one fits no terminal
// (grpo eval plays any size without drawing).
constexpr int kMaxDrawnSide = 1000;

struct PlayState {
  std::string checkpoint;
  double fps = 10;
  PlayOptions opt;
  int win_score = 0, fail_score = 0;
};

// One frame: a status line, then the H x W screen: fruits 'o', the sprite '=' on the last row.
std::string frame(const GameConfig& g, const GameState& s, int t, bool color) {
  std::vector<std::string> rows(size_t(g.screen_height), std::string(size_t(g.screen_width), '.'));
  for (int i = 0; i < g.max_fruits; ++i)
    if (slot_active(s, i) && s.fruit_y[i] < g.screen_height) rows[s.fruit_y[i]][s.fruit_x[i]] = 'o';
  const int half = g.sprite_width / 2;
  for (int x = s.sprite_x - half; x <= s.sprite_x + half; ++x)
    if (x >= 0 && x < g.screen_width) rows.back()[x] = '=';
  std::string out = "step " + std::to_string(t + 1) + "  score " + std::to_string(s.score) + "  caught " +
                    std::to_string(s.caught) + "  missed " + std::to_string(s.bottomed - s.caught) + "\n";
  for (const std::string& r : rows) {
    for (char ch : r) {
      if (color && ch == 'o')
        out += "\033[1;31mo\033[0m";
      else if (color && ch == '=')
        out += "\033[1;32m=\033[0m";
      else
        out += ch;
    }
    out += '\n';
  }
  return out;
}

int run_play(CLI::App& app, PlayState st) {
  Checkpoint ck = load_checkpoint(st.checkpoint);
  if (app.count("--win-score")) ck.config.game.win_score = st.win_score;
  if (app.count("--fail-score")) ck.config.game.fail_score = st.fail_score;
  ck.config.game.validate();
  const GameConfig& g = ck.config.game;
  if (g.screen_width > kMaxDrawnSide || g.screen_height > kMaxDrawnSide)
    throw UsageError("--checkpoint " + st.checkpoint + ": its " + std::to_string(g.screen_width) + " x " +
                     std::to_string(g.screen_height) + " screen is too large to draw (play draws up to " +
                     std::to_string(kMaxDrawnSide) + " x " + std::to_string(kMaxDrawnSide) +
                     "; grpo eval plays any size)");
  const bool tty = isatty(fileno(stdout));
  HostPolicy policy(ck, 1);
  st.opt.games = 1;
  const auto period = std::chrono::duration<double>(st.fps > 0 ? 1.0 / st.fps : 0.0);
  auto draw = [&](int t, const std::vector<GameState>& s) {
    // Home and clear on a terminal: the game animates in place. Piped, frames follow each other.
    std::string out = tty ? "\033[H\033[2J" : "\n";
    out += frame(g, s[0], t, tty);
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    if (st.fps > 0) std::this_thread::sleep_for(period);
  };
  const GameOutcome o = play_games(g, policy, st.opt, draw)[0];
  const char* how = o.end == GameEnd::Won ? "won" : o.end == GameEnd::Lost ? "lost" : "step cap reached";
  std::printf("%s after %d steps: score %d, caught %d of %d fruits (catch rate %.1f%%), %s policy\n", how,
              o.final.steps, o.final.score, o.final.caught, o.final.bottomed,
              o.final.bottomed ? 100.0 * o.final.caught / o.final.bottomed : 0.0, st.opt.greedy ? "greedy" : "sampled");
  return 0;
}

}  // namespace

Command add_play_command(CLI::App& app) {
  auto st = std::make_shared<PlayState>();
  CLI::App* sub = app.add_subcommand("play", "watch a checkpoint's policy play one game in the terminal");
  sub->add_option("--checkpoint", st->checkpoint, "a .safetensors checkpoint written by grpo train")->required();
  sub->add_option("--fps", st->fps, "frames per second (0: as fast as possible)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--max-steps", st->opt.max_steps, "step cap of the game")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  sub->add_flag("--greedy", st->opt.greedy, "take the most likely action instead of sampling one");
  sub->add_option("--dropout", st->opt.dropout, "dropout while playing (the reference plays with 0.1)")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  sub->add_option("--seed", st->opt.seed, "seed of the game's and the sampler's draws")->capture_default_str();
  sub->add_option("--win-score", st->win_score, "won at this score (default: the checkpoint's)");
  sub->add_option("--fail-score", st->fail_score, "lost at this score (default: the checkpoint's)");
  return {sub, [sub, st] { return run_play(*sub, *st); }};
}

}  // namespace grpo
