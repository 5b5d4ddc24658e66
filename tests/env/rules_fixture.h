// Helpers for the env tests: hand-built game states and draws.
#pragma once
#include <initializer_list>
#include <vector>

#include "env/rules.h"

namespace grpo::test {

struct Fruit {
  int x, y, active;
};

// A state with the sprite at sx and the given fruit slots (the rest inactive at (0, 0)).
inline GameState make_state(int sx, std::initializer_list<Fruit> fruits) {
  GameState s = start_state(0, 0);
  s.sprite_x = sx;
  s.active = 0;
  int i = 0;
  for (const Fruit& f : fruits) {
    s.fruit_x[i] = f.x;
    s.fruit_y[i] = f.y;
    if (f.active) s.active |= 1u << i;
    ++i;
  }
  return s;
}

inline StepDraws make_draws(float coin, std::initializer_list<int> xs) {
  StepDraws d{};
  d.coin = coin;
  int j = 0;
  for (int x : xs) d.spawn_x[j++] = x;
  for (; j < kMaxFruitSlots; ++j) d.spawn_x[j] = 0;
  return d;
}

inline GameConfig config(int W, int H, int S, int fmax, int fmin, int interval) {
  GameConfig c;
  c.screen_width = W;
  c.screen_height = H;
  c.sprite_width = S;
  c.max_fruits = fmax;
  c.min_fruits = fmin;
  c.min_interval_steps = interval;
  return c;
}

}  // namespace grpo::test
