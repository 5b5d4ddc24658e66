// The game's command-line flags, shared by `grpo train`, `play` and `eval` (spec names).
#pragma once
#include <CLI/CLI.hpp>

#include "env/game_config.h"

namespace grpo {

// Registers --screen-width ... --fail-score on `app`, writing into `cfg` (whose current values
// are the defaults shown in --help). Call cfg.validate() after parsing: ranges are checked there,
// with one message naming the flag, rather than by CLI11 (which checks the values' form:
// cli/flag_checks.h).
void add_game_flags(CLI::App& app, GameConfig& cfg);

}  // namespace grpo
