// The game's command-line flags, shared by `grpo train`, `play` and `eval` (spec names).
#pragma once
#include <CLI/CLI.hpp>

#include "env/game_config.h"

namespace grpo {

// Registers --screen-width ... --fail-score on `app`, writing into `cfg` (whose current values
// are the defaults shown in --help). Call cfg.validate() after parsing: ranges are checked there,
// with one message naming the flag, rather than by CLI11.
void add_game_flags(CLI::App& app, GameConfig& cfg);

// Accepts only a plain decimal integer ("16", and "-3" when negative values are allowed): CLI11
// alone also takes "0x10", " 16" and "1e3" for an integer option. Check it before any range.
CLI::Validator plain_integer(bool negative_allowed);

}  // namespace grpo
