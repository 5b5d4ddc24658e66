#include "cli/game_flags.h"

namespace grpo {

CLI::Validator plain_integer(bool negative_allowed) {
  return CLI::Validator(
      [negative_allowed](std::string& v) -> std::string {
        const size_t digits = !v.empty() && v[0] == '-' && negative_allowed ? 1 : 0;
        bool ok = v.size() > digits && v.size() <= digits + 19;
        for (size_t i = digits; ok && i < v.size(); ++i) ok = v[i] >= '0' && v[i] <= '9';
        if (ok) return {};
        std::string shown;  // the value as typed, control characters escaped, cut short
        for (char ch : v.substr(0, 40)) shown += (unsigned char)ch < 32 ? "?" : std::string(1, ch);
        return std::string("must be a plain decimal integer") + (negative_allowed ? "" : " >= 0") + ", got \"" + shown +
               (v.size() > 40 ? "...\"" : "\"");
      },
      negative_allowed ? "INT" : "UINT");
}

void add_game_flags(CLI::App& app, GameConfig& cfg) {
  app.add_option("--screen-width", cfg.screen_width, "screen width W (>= 4)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--screen-height", cfg.screen_height, "screen height H (>= 2)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--sprite-width", cfg.sprite_width, "sprite width S (1..W)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--max-fruits", cfg.max_fruits, "fruit slots Fmax (1..8)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--min-fruits", cfg.min_fruits, "minimum fruits Fmin (1..Fmax)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--min-interval-steps", cfg.min_interval_steps,
                 "rows the topmost fruit must have fallen before another spawns (>= 0)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--win-score", cfg.win_score, "play/eval: a game is won at this score (> 0)")
      ->check(plain_integer(true))
      ->capture_default_str();
  app.add_option("--fail-score", cfg.fail_score, "play/eval: a game is lost at this score (< 0)")
      ->check(plain_integer(true))
      ->capture_default_str();
}

}  // namespace grpo
