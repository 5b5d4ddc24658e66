#include "env/game_config.h"

#include <string>

#include "core/errors.h"

namespace grpo {

namespace {
void require(bool ok, const char* flag, const std::string& range, long long got) {
  if (!ok) throw UsageError(std::string(flag) + " must be " + range + " (got " + std::to_string(got) + ")");
}
}  // namespace

void GameConfig::validate() const {
  const std::string side = std::to_string(kMaxScreenSide);
  require(screen_width >= 4 && screen_width <= kMaxScreenSide, "--screen-width",
          "in [4, " + side + "] (at least one start group needs W >= 4)", screen_width);
  require(screen_height >= 2 && screen_height <= kMaxScreenSide, "--screen-height", "in [2, " + side + "]",
          screen_height);
  require(sprite_width >= 1 && sprite_width <= screen_width, "--sprite-width",
          "in [1, --screen-width = " + std::to_string(screen_width) + "]", sprite_width);
  require(max_fruits >= 1 && max_fruits <= kMaxFruitSlots, "--max-fruits",
          "in [1, " + std::to_string(kMaxFruitSlots) + "]", max_fruits);
  require(min_fruits >= 1 && min_fruits <= max_fruits, "--min-fruits",
          "in [1, --max-fruits = " + std::to_string(max_fruits) + "]", min_fruits);
  require(min_interval_steps >= 0, "--min-interval-steps", ">= 0", min_interval_steps);
  require(win_score > 0, "--win-score", "> 0", win_score);
  require(fail_score < 0, "--fail-score", "< 0", fail_score);
}

}  // namespace grpo
