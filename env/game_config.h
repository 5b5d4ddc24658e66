// The game's parameters (docs/spec/fruit_catcher.md, "Parameters"). A plain trivially copyable struct:
// kernels take it by value, so it holds no pointers and nothing that changes during a run.
#pragma once
#include "core/host_device.h"

namespace grpo {

// Fruit slots are a fixed-size array in the per-game state so that a kernel keeps them in
// registers (fully unrolled loops, no local memory); --max-fruits is validated against it.
constexpr int kMaxFruitSlots = 8;

struct GameConfig {
  int screen_width = 20;       // W, --screen-width
  int screen_height = 15;      // H, --screen-height (the sprite lives on row H-1)
  int sprite_width = 3;        // S, --sprite-width
  int max_fruits = 3;          // Fmax, --max-fruits
  int min_fruits = 1;          // Fmin, --min-fruits
  int min_interval_steps = 5;  // I, --min-interval-steps
  int win_score = 30;          // --win-score (play/eval only)
  int fail_score = -30;        // --fail-score (play/eval only)

  // Throws UsageError naming the first offending flag and its accepted range.
  void validate() const;
  // Length of one observation: sprite x, then (x, y, active) per fruit slot.
  GRPO_HD int obs_dim() const { return 1 + 3 * max_fruits; }
  // Number of start groups G (group g starts with the sprite at x = g + 1).
  GRPO_HD int groups() const { return screen_width - 3; }
};

// Upper bounds that keep every counter and coordinate exact in int32 and float32.
constexpr int kMaxScreenSide = 1 << 20;

}  // namespace grpo
