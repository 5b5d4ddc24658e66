// The rules of one Fruit Catcher game (docs/spec/fruit_catcher.md, normative), as __host__ __device__
// functions over a plain state struct. The same code runs in the step kernel (env/games.cu), the
// host executor (env/games_host.cpp) and the conformance interface (`grpo replay`).
//
// Nothing here draws random numbers: a step takes its draws (one coin, Fmax spawn x values) as
// an argument, so an independent implementation fed the same draws must agree bit for bit.
// Loops run over a fixed bound (kMaxFruitSlots, with `i < max_fruits` guards, or the exact slot
// count of Slots<N>), fully unrolled, and never index an array with a runtime value: on the device
// the state stays in registers.
#pragma once
#include <cstdint>

#include "env/game_config.h"
#include "core/exact_math.h"
#include "core/host_device.h"

// Device pass only: g++ (and nvcc's host pass) would warn about an unknown pragma.
#if defined(__CUDA_ARCH__)
#define GRPO_UNROLL _Pragma("unroll")
#else
#define GRPO_UNROLL
#endif

namespace grpo {

enum Action : int32_t { kLeft = 0, kStay = 1, kRight = 2 };

struct GameState {
  int32_t sprite_x;                 // [0, W-1]
  uint32_t active;                  // bit i set: slot i holds a falling fruit
  int32_t fruit_x[kMaxFruitSlots];  // kept when a fruit is deactivated (spec: not cleared)
  int32_t fruit_y[kMaxFruitSlots];
  int32_t score;  // caught - missed
  int32_t steps;
  int32_t bottomed;  // fruits that reached the bottom row or left the screen
  int32_t caught;    // not in the spec's state; evaluation's catch rate needs it
};

// The random numbers one step may consume. The coin is a float32 (the type the engine draws;
// `grpo replay` rounds its input coins to float32 before the u > 0.5 test).
struct StepDraws {
  float coin;                       // u in [0, 1)
  int32_t spawn_x[kMaxFruitSlots];  // x'_j in [0, W-1]; only the first max_fruits are read
};

struct StepEvents {
  int32_t caught;    // fruits at the bottom row inside the sprite (after the move)
  int32_t missed;    // fruits at the bottom row outside it
  int32_t bottomed;  // fruits deactivated this step: caught + missed + off screen (g in the spec)
  int32_t spawned;
};

struct StepResult {
  GameState state;
  StepEvents events;
};

// The fruit slots a step's code is compiled for. AnySlots (Slots<0>): any cfg.max_fruits up to
// kMaxFruitSlots, each loop over all kMaxFruitSlots slots with a run-time test of each. Slots<N>:
// exactly N, which the caller has checked is cfg.max_fruits (step_one_game, for the default three),
// each loop N long with nothing to test: the same arithmetic on the same slots, so the same bits,
// in far fewer instructions on the rollout's one thread that plays a game while its block waits.
template <int N>
struct Slots {
  static_assert(N >= 0 && N <= kMaxFruitSlots, "Slots<N>: N is 0 (any) or a slot count");
  static constexpr int kLoop = N > 0 ? N : kMaxFruitSlots;  // slots a loop visits
  GRPO_HD static int fruits(int max_fruits) { return N > 0 ? N : max_fruits; }
};
using AnySlots = Slots<0>;
constexpr int kDefaultFruits = GameConfig{}.max_fruits;  // the slot count compiled apart

GRPO_HD bool slot_active(const GameState& s, int i) { return (s.active >> i) & 1u; }

// Slots past S::kLoop are never active.
template <class S = AnySlots>
GRPO_HD int active_count(const GameState& s) {
  int n = 0;
  GRPO_UNROLL
  for (int i = 0; i < S::kLoop; ++i) n += (s.active >> i) & 1u;
  return n;
}

// Start of an epoch for group `group` (0-based): sprite at group + 1, slot 0 falling from
// (start_x, 0), every other slot (0, 0, inactive), counters zero.
GRPO_HD GameState start_state(int group, int32_t start_x) {
  GameState s;
  s.sprite_x = group + 1;
  s.active = 1u;
  GRPO_UNROLL
  for (int i = 0; i < kMaxFruitSlots; ++i) {
    s.fruit_x[i] = 0;
    s.fruit_y[i] = 0;
  }
  s.fruit_x[0] = start_x;
  s.score = s.steps = s.bottomed = s.caught = 0;
  return s;
}

// draws.spawn_x[j] for a runtime j < S::kLoop, as a chain of selects (a runtime index would put
// the array in local memory on the device).
template <class S = AnySlots>
GRPO_HD int32_t spawn_x_at(const StepDraws& d, int j) {
  int32_t x = d.spawn_x[0];
  GRPO_UNROLL
  for (int k = 1; k < S::kLoop; ++k)
    if (k == j) x = d.spawn_x[k];
  return x;
}

// One step, spec steps 1-7. `action` must be 0, 1 or 2 (callers validate). S: Slots.
template <class S = AnySlots>
GRPO_HD StepResult step(const GameConfig& cfg, GameState s, int32_t action, const StepDraws& d) {
  StepEvents ev{0, 0, 0, 0};
  const int W = cfg.screen_width, H = cfg.screen_height, F = S::fruits(cfg.max_fruits);
  // 1. Move, clamped to the screen.
  int32_t sx = s.sprite_x + action - 1;
  sx = sx < 0 ? 0 : (sx > W - 1 ? W - 1 : sx);
  s.sprite_x = sx;
  const int half = cfg.sprite_width / 2;
  // 2-5. Fall, classify against the moved sprite, deactivate (x and y kept).
  GRPO_UNROLL
  for (int i = 0; i < S::kLoop; ++i) {
    if (i >= F || !slot_active(s, i)) continue;
    const int32_t y = s.fruit_y[i] + 1;
    s.fruit_y[i] = y;
    if (y >= H - 1) {
      if (y == H - 1) {
        const int32_t x = s.fruit_x[i];
        if (sx - half <= x && x <= sx + half)
          ++ev.caught;
        else
          ++ev.missed;
      }
      s.active &= ~(1u << i);
      ++ev.bottomed;
    }
  }
  // 6. Counters.
  s.score += ev.caught - ev.missed;
  s.steps += 1;
  s.bottomed += ev.bottomed;
  s.caught += ev.caught;
  // 7. Spawn, from the state after step 5.
  const int n = active_count<S>(s);
  int32_t min_y = 0;
  bool any = false;
  GRPO_UNROLL
  for (int i = 0; i < S::kLoop; ++i) {
    if (i >= F || !slot_active(s, i)) continue;
    if (!any || s.fruit_y[i] < min_y) min_y = s.fruit_y[i];
    any = true;
  }
  const bool random = ev.bottomed == 0 && n < F && n >= cfg.min_fruits && d.coin > 0.5f;
  const int need = (random ? 1 : 0) + (cfg.min_fruits - n > 0 ? cfg.min_fruits - n : 0);
  const bool gate = n == 0 || min_y >= cfg.min_interval_steps;
  if (gate) {
    const int free_slots = F - n;
    const int spawn = need < free_slots ? need : free_slots;
    int j = 0;
    GRPO_UNROLL
    for (int i = 0; i < S::kLoop; ++i) {
      if (i >= F || slot_active(s, i) || j >= spawn) continue;
      s.fruit_x[i] = spawn_x_at<S>(d, j);
      s.fruit_y[i] = 0;
      s.active |= 1u << i;
      ++j;
    }
    ev.spawned = j;
  }
  return {s, ev};
}

// Observation [sprite_x, x0, y0, a0, x1, y1, a1, ...]: cfg.obs_dim() contiguous floats, raw
// values; an inactive slot shows the x and y it had when it was deactivated.
template <class S = AnySlots>
GRPO_HD void write_observation(const GameConfig& cfg, const GameState& s, float* out) {
  out[0] = static_cast<float>(s.sprite_x);
  GRPO_UNROLL
  for (int i = 0; i < S::kLoop; ++i) {
    if (i >= S::fruits(cfg.max_fruits)) continue;
    out[1 + 3 * i] = static_cast<float>(s.fruit_x[i]);
    out[2 + 3 * i] = static_cast<float>(s.fruit_y[i]);
    out[3 + 3 * i] = slot_active(s, i) ? 1.f : 0.f;
  }
}

// ---- Reward (docs/spec/training.md, step 2) ----
// Computed in double, in the reference's (Python's) order of operations, then rounded once to
// float32. The device must not contract a*b+c into an FMA (the host never does), hence the
// explicitly rounded intrinsics there; exp is a fixed Taylor/Horner evaluation rather than
// libm/libdevice exp, so host and device agree bit for bit (the t = 0 argument is in [0, 1]).
// e^c - 1 for c in [0, 1] (reachable states have 0 <= score <= bottomed after the first step),
// to within a few double ulps: c (1 + c/2 (1 + c/3 (... (1 + c/25)))), every term below 2^-80.
// Outside [0, 1] it stays deterministic but loses accuracy; the clamp to [-2, 2] hides that.
GRPO_HD double expm1_unit(double c) {
  double acc = 1.0;
  for (int k = 25; k >= 2; --k) acc = add_rn(1.0, mul_rn(c / k, acc));
  return mul_rn(c, acc);
}

GRPO_HD float clamp_reward(double r) { return static_cast<float>(r < -2.0 ? -2.0 : (r > 2.0 ? 2.0 : r)); }

// t = 0: from the counters after the first step. Out of line: a rollout runs it once in T steps.
GRPO_HD_COLD float reward_first(int32_t score, int32_t bottomed) {
  const double c = static_cast<double>(score > 0 ? score : 0) / static_cast<double>(bottomed > 1 ? bottomed : 1);
  const double r = add_rn(add_rn(mul_rn(0.1, score), mul_rn(0.5, expm1_unit(c))), 0.05);
  return clamp_reward(r);
}

// t >= 1: from the score change d = score_t - score_{t-1}.
GRPO_HD float reward_later(int32_t score_before, int32_t score_after) {
  const int32_t d = score_after - score_before;
  const double r = add_rn(add_rn(add_rn(static_cast<double>(d > 0 ? d : 0), mul_rn(0.5, d < 0 ? d : 0)), -0.01), 0.05);
  return clamp_reward(r);
}

// The reward of step t, from the score before the step and the state after it.
GRPO_HD float step_reward(uint32_t t, int32_t score_before, const GameState& after) {
  return t == 0 ? reward_first(after.score, after.bottomed) : reward_later(score_before, after.score);
}

}  // namespace grpo
