// `grpo replay`, the conformance interface: a JSON document gives the game
// parameters, N start observations and, per step, the actions and the draws; after each step one
// JSON line reports the observations, counters and rewards. The rules run on the host executor
// or on the device (the emulator in the SIMT build) through the same vectorised functions.
//
// Input (one JSON document):
//   {"game": {"screen_width": 20, ...},      optional; any of the eight GameConfig keys
//                                            (screen_width, screen_height, sprite_width,
//                                            max_fruits, min_fruits, min_interval_steps,
//                                            win_score, fail_score); missing keys take defaults
//    "observations": [[...], ...],           N >= 1 rows of 1 + 3*Fmax integral numbers:
//                                            sprite x and fruit x in [0, W-1], y in [0, 2^24 - 2],
//                                            active 0 or 1
//    "steps": [{"actions": [N ints 0..2], "coins": [N numbers in [0, 1)],
//               "spawn_x": [N rows of Fmax ints in [0, W-1]]}, ...]}
// Coins are rounded to float32 (the type the engine draws) before the u > 0.5 test. Scores,
// steps and bottomed start at 0. Unknown keys are refused (a misspelt parameter would otherwise
// silently take its default).
// Output, after step k (0-based), one line:
//   {"t": k, "observations": [[...]], "score": [...], "steps": [...], "bottomed": [...], "reward": [...]}
// observations as integers (they are integral floats), reward as the shortest decimal that
// reads back as the same float32.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "env/game_config.h"
#include "env/rules.h"

namespace grpo {

struct ReplayStep {
  std::vector<int32_t> actions;  // n
  std::vector<float> coins;      // n
  std::vector<int32_t> spawn_x;  // n * max_fruits, row-major per game
};

struct ReplayDocument {
  GameConfig cfg;
  int n = 0;
  std::vector<GameState> start;  // n states built from the start observations, counters 0
  std::vector<ReplayStep> steps;
};

// State of all games after one step, as printed.
struct ReplayFrame {
  std::vector<float> observations;  // n * obs_dim
  std::vector<int32_t> score, steps, bottomed;
  std::vector<float> reward;
};

// Parses and validates a document; throws UsageError with one line naming the field.
ReplayDocument parse_replay(std::istream& in);
// One output line (without the newline).
std::string format_replay_frame(const GameConfig& cfg, uint32_t t, const ReplayFrame& f);

// Runs every step of doc and calls emit(t, frame) after each.
using ReplayEmit = std::function<void(uint32_t, const ReplayFrame&)>;
using ReplayBackend = void (*)(const ReplayDocument&, const ReplayEmit&);
void replay_host(const ReplayDocument& doc, const ReplayEmit& emit);
#if defined(GRPO_HAVE_CUDA)
void replay_cuda(const ReplayDocument& doc, const ReplayEmit& emit);  // env/replay_cuda.cpp
#endif

// Parses `in`, runs it on `backend` and writes one line per step to `out`.
void run_replay(std::istream& in, std::ostream& out, ReplayBackend backend);

}  // namespace grpo
