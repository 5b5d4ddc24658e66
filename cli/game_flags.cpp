#include "cli/game_flags.h"

namespace grpo {

void add_game_flags(CLI::App& app, GameConfig& cfg) {
  app.add_option("--screen-width", cfg.screen_width, "screen width W (>= 4)")->capture_default_str();
  app.add_option("--screen-height", cfg.screen_height, "screen height H (>= 2)")->capture_default_str();
  app.add_option("--sprite-width", cfg.sprite_width, "sprite width S (1..W)")->capture_default_str();
  app.add_option("--max-fruits", cfg.max_fruits, "fruit slots Fmax (1..8)")->capture_default_str();
  app.add_option("--min-fruits", cfg.min_fruits, "minimum fruits Fmin (1..Fmax)")->capture_default_str();
  app.add_option("--min-interval-steps", cfg.min_interval_steps,
                 "rows the topmost fruit must have fallen before another spawns (>= 0)")
      ->capture_default_str();
  app.add_option("--win-score", cfg.win_score, "play/eval: a game is won at this score (> 0)")->capture_default_str();
  app.add_option("--fail-score", cfg.fail_score, "play/eval: a game is lost at this score (< 0)")
      ->capture_default_str();
}

}  // namespace grpo
