// Every rule of docs/spec/fruit_catcher.md on hand-built states.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "env/rules.h"
#include "tests/env/rules_fixture.h"

namespace grpo {
namespace {
using test::config;
using test::make_draws;
using test::make_state;

const StepDraws kNoCoin = make_draws(0.25f, {11, 12, 13, 14, 15, 16, 17, 18});
const StepDraws kCoin = make_draws(0.75f, {11, 12, 13, 14, 15, 16, 17, 18});

TEST(Rules, MoveAndClampAtBothWalls) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  const GameState mid = make_state(7, {{3, 2, 1}});
  EXPECT_EQ(step(c, mid, kLeft, kNoCoin).state.sprite_x, 6);
  EXPECT_EQ(step(c, mid, kStay, kNoCoin).state.sprite_x, 7);
  EXPECT_EQ(step(c, mid, kRight, kNoCoin).state.sprite_x, 8);
  EXPECT_EQ(step(c, make_state(0, {{3, 2, 1}}), kLeft, kNoCoin).state.sprite_x, 0);
  EXPECT_EQ(step(c, make_state(19, {{3, 2, 1}}), kRight, kNoCoin).state.sprite_x, 19);
  EXPECT_EQ(step(c, make_state(19, {{3, 2, 1}}), kLeft, kNoCoin).state.sprite_x, 18);
}

TEST(Rules, ActiveFruitsFallInactiveOnesStayPut) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  const StepResult r = step(c, make_state(7, {{3, 2, 1}, {9, 6, 0}, {4, 13, 0}}), kStay, kNoCoin);
  EXPECT_EQ(r.state.fruit_y[0], 3);
  EXPECT_EQ(r.state.fruit_x[1], 9);
  EXPECT_EQ(r.state.fruit_y[1], 6);
  EXPECT_EQ(r.state.fruit_x[2], 4);
  EXPECT_EQ(r.state.fruit_y[2], 13);
  EXPECT_EQ(r.state.active, 1u);
  EXPECT_EQ(r.state.steps, 1);
  EXPECT_EQ(r.state.score, 0);
  EXPECT_EQ(r.state.bottomed, 0);
}

// One fruit one row above the bottom, sprite at sx moving by `action`: caught?
int catch_outcome(int S, int sx, int action, int fruit_x) {
  const GameConfig c = config(20, 15, S, 3, 1, 5);
  const StepResult r = step(c, make_state(sx, {{fruit_x, 13, 1}}), action, kNoCoin);
  EXPECT_EQ(r.events.caught + r.events.missed, 1);
  EXPECT_EQ(r.state.bottomed, 1);
  EXPECT_EQ(r.state.score, r.events.caught - r.events.missed);
  // The only fruit left, so the refill puts x'_0 = 11 at the top of slot 0.
  EXPECT_EQ(r.events.spawned, 1);
  EXPECT_EQ(r.state.fruit_x[0], 11);
  EXPECT_EQ(r.state.fruit_y[0], 0);
  return r.events.caught;
}

TEST(Rules, CatchAtBothSpriteEdgesAndJustOutside) {
  EXPECT_EQ(catch_outcome(3, 10, kStay, 9), 1);
  EXPECT_EQ(catch_outcome(3, 10, kStay, 11), 1);
  EXPECT_EQ(catch_outcome(3, 10, kStay, 10), 1);
  EXPECT_EQ(catch_outcome(3, 10, kStay, 8), 0);
  EXPECT_EQ(catch_outcome(3, 10, kStay, 12), 0);
}

TEST(Rules, CatchUsesTheSpritePositionAfterTheMove) {
  EXPECT_EQ(catch_outcome(3, 10, kRight, 12), 1);  // out of reach before the move
  EXPECT_EQ(catch_outcome(3, 10, kRight, 9), 0);   // in reach before the move
  EXPECT_EQ(catch_outcome(3, 10, kLeft, 8), 1);
  EXPECT_EQ(catch_outcome(3, 10, kLeft, 11), 0);
  EXPECT_EQ(catch_outcome(3, 0, kLeft, 1), 1);  // clamped at the wall, then caught
}

TEST(Rules, SpriteWidthsOneFourAndFive) {
  EXPECT_EQ(catch_outcome(1, 10, kStay, 10), 1);
  EXPECT_EQ(catch_outcome(1, 10, kStay, 9), 0);
  EXPECT_EQ(catch_outcome(1, 10, kStay, 11), 0);
  EXPECT_EQ(catch_outcome(5, 10, kStay, 8), 1);
  EXPECT_EQ(catch_outcome(5, 10, kStay, 12), 1);
  EXPECT_EQ(catch_outcome(5, 10, kStay, 7), 0);
  EXPECT_EQ(catch_outcome(5, 10, kStay, 13), 0);
  // Even widths reach floor(S/2) to each side: S = 4 covers 5 columns.
  EXPECT_EQ(catch_outcome(4, 10, kStay, 8), 1);
  EXPECT_EQ(catch_outcome(4, 10, kStay, 12), 1);
  EXPECT_EQ(catch_outcome(4, 10, kStay, 13), 0);
}

TEST(Rules, MissLowersTheScoreAndKeepsTheFruitsPlace) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  GameState s = make_state(3, {{15, 13, 1}, {2, 4, 1}});
  s.score = 4;
  s.bottomed = 7;
  s.caught = 5;
  const StepResult r = step(c, s, kStay, kCoin);
  EXPECT_EQ(r.events.missed, 1);
  EXPECT_EQ(r.events.caught, 0);
  EXPECT_EQ(r.state.score, 3);
  EXPECT_EQ(r.state.bottomed, 8);
  EXPECT_EQ(r.state.caught, 5);
  EXPECT_FALSE(slot_active(r.state, 0));
  EXPECT_EQ(r.state.fruit_x[0], 15);  // deactivated, not cleared
  EXPECT_EQ(r.state.fruit_y[0], 14);
  EXPECT_EQ(r.events.spawned, 0);  // a fruit left this step: no random spawn, and n = 1 >= Fmin
}

TEST(Rules, SeveralFruitsAtTheBottomInOneStep) {
  const GameConfig c = config(20, 15, 3, 4, 1, 0);
  const StepResult r = step(c, make_state(10, {{9, 13, 1}, {11, 13, 1}, {14, 13, 1}, {1, 3, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.caught, 2);
  EXPECT_EQ(r.events.missed, 1);
  EXPECT_EQ(r.events.bottomed, 3);
  EXPECT_EQ(r.state.score, 1);
  EXPECT_EQ(r.state.bottomed, 3);
  EXPECT_EQ(r.state.active, 0b1000u);
  EXPECT_EQ(r.events.spawned, 0);
}

TEST(Rules, OffScreenFruitsAreBottomedButNeitherCaughtNorMissed) {
  const GameConfig c = config(20, 15, 3, 3, 1, 0);
  const StepResult r = step(c, make_state(10, {{10, 14, 1}, {2, 40, 1}, {5, 5, 1}}), kStay, kNoCoin);
  EXPECT_EQ(r.events.caught, 0);
  EXPECT_EQ(r.events.missed, 0);
  EXPECT_EQ(r.events.bottomed, 2);
  EXPECT_EQ(r.state.score, 0);
  EXPECT_EQ(r.state.bottomed, 2);
  EXPECT_EQ(r.state.fruit_y[0], 15);
  EXPECT_EQ(r.state.fruit_y[1], 41);
  EXPECT_EQ(r.state.active, 0b100u);
}

TEST(Rules, SpawnGateAtIntervalMinusOneAndAtInterval) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  // After the fall the only fruit is at y = I - 1: gate closed, even with a winning coin.
  StepResult r = step(c, make_state(10, {{4, 3, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 0);
  EXPECT_EQ(r.state.active, 1u);
  // At y = I: open, one random fruit into slot 1 with x'_0.
  r = step(c, make_state(10, {{4, 4, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 1);
  EXPECT_EQ(r.state.active, 0b11u);
  EXPECT_EQ(r.state.fruit_x[1], 11);
  EXPECT_EQ(r.state.fruit_y[1], 0);
  // The gate looks at the active fruit nearest the top.
  r = step(c, make_state(10, {{4, 9, 1}, {5, 3, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 0);
  // Inactive fruits near the top do not close it.
  r = step(c, make_state(10, {{4, 9, 1}, {5, 0, 0}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 1);
  EXPECT_EQ(r.state.fruit_x[1], 11);
}

TEST(Rules, RandomSpawnNeedsACoinAboveOneHalf) {
  const GameConfig c = config(20, 15, 3, 3, 1, 0);
  EXPECT_EQ(step(c, make_state(10, {{4, 4, 1}}), kStay, make_draws(0.5f, {7, 8, 9})).events.spawned, 0);
  EXPECT_EQ(step(c, make_state(10, {{4, 4, 1}}), kStay, make_draws(0.50000006f, {7, 8, 9})).events.spawned, 1);
  EXPECT_EQ(step(c, make_state(10, {{4, 4, 1}}), kStay, make_draws(0.f, {7, 8, 9})).events.spawned, 0);
}

TEST(Rules, MinimumFruitRefillAfterTheLastFruitLeaves) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  // The last fruit is caught: n = 0, the gate is open and Fmin - n = 1 fruit comes, coin or not.
  StepResult r = step(c, make_state(10, {{10, 13, 1}}), kStay, kNoCoin);
  EXPECT_EQ(r.events.caught, 1);
  EXPECT_EQ(r.events.spawned, 1);
  EXPECT_EQ(r.state.active, 1u);
  EXPECT_EQ(r.state.fruit_x[0], 11);
  EXPECT_EQ(r.state.fruit_y[0], 0);
  // Fmin = 2: both come, into slots 0 and 1, taking x'_0 and x'_1; the coin adds nothing (g > 0).
  const GameConfig c2 = config(20, 15, 3, 3, 2, 5);
  r = step(c2, make_state(10, {{0, 13, 1}, {1, 9, 0}, {19, 13, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.missed, 2);
  EXPECT_EQ(r.events.spawned, 2);
  EXPECT_EQ(r.state.active, 0b011u);
  EXPECT_EQ(r.state.fruit_x[0], 11);
  EXPECT_EQ(r.state.fruit_x[1], 12);
  EXPECT_EQ(r.state.fruit_x[2], 19);
  EXPECT_EQ(r.state.fruit_y[2], 14);
}

TEST(Rules, BelowMinimumRefillsWithoutTheCoinAndRespectsTheGate) {
  const GameConfig c = config(20, 15, 3, 4, 3, 2);
  // n = 1 < Fmin = 3: need 2 (the coin cannot add one: random needs n >= Fmin).
  StepResult r = step(c, make_state(10, {{4, 5, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 2);
  EXPECT_EQ(r.state.active, 0b0111u);
  // Same with the top fruit at y = 1 < I = 2 after the fall: nothing.
  r = step(c, make_state(10, {{4, 0, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 0);
}

TEST(Rules, SpawnsGoToTheLowestFreeSlotsInOrder) {
  const GameConfig c = config(20, 15, 3, 5, 4, 0);
  // Slots 0, 2, 4 active; 1 and 3 free: the first spawned takes slot 1 and x'_0, the next slot 3, x'_1.
  const StepResult r = step(c, make_state(10, {{1, 3, 1}, {2, 9, 0}, {3, 4, 1}, {4, 5, 0}, {5, 6, 1}}), kStay, kNoCoin);
  EXPECT_EQ(r.events.spawned, 1);  // n = 3, Fmin = 4: need 1
  EXPECT_EQ(r.state.active, 0b10111u);
  EXPECT_EQ(r.state.fruit_x[1], 11);
  EXPECT_EQ(r.state.fruit_y[1], 0);
  EXPECT_EQ(r.state.fruit_x[3], 4);
  EXPECT_EQ(r.state.fruit_y[3], 5);
  const GameConfig c5 = config(20, 15, 3, 5, 5, 0);
  const StepResult r5 =
      step(c5, make_state(10, {{1, 3, 1}, {2, 9, 0}, {3, 4, 1}, {4, 5, 0}, {5, 6, 1}}), kStay, kNoCoin);
  EXPECT_EQ(r5.events.spawned, 2);
  EXPECT_EQ(r5.state.fruit_x[1], 11);
  EXPECT_EQ(r5.state.fruit_x[3], 12);
}

TEST(Rules, NoSpawnWhenEverySlotIsFull) {
  const GameConfig c = config(20, 15, 3, 3, 1, 0);
  const StepResult r = step(c, make_state(10, {{1, 5, 1}, {2, 6, 1}, {3, 7, 1}}), kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 0);
  EXPECT_EQ(r.state.active, 0b111u);
}

TEST(Rules, SlotsBeyondMaxFruitsAreNeverTouched) {
  const GameConfig c = config(20, 15, 3, 2, 2, 0);
  GameState s = make_state(10, {{10, 13, 1}, {3, 13, 1}, {7, 7, 0}});
  const StepResult r = step(c, s, kStay, kCoin);
  EXPECT_EQ(r.events.spawned, 2);
  EXPECT_EQ(r.state.active, 0b11u);
  EXPECT_EQ(r.state.fruit_x[2], 7);
  EXPECT_EQ(r.state.fruit_y[2], 7);
}

TEST(Rules, TinyScreen) {
  // W = 4, H = 2: a fruit spawned at y = 0 reaches the bottom row on the next step.
  const GameConfig c = config(4, 2, 1, 1, 1, 0);
  ASSERT_EQ(c.groups(), 1);
  GameState s = start_state(0, 2);
  EXPECT_EQ(s.sprite_x, 1);
  StepResult r = step(c, s, kRight, make_draws(0.9f, {0}));
  EXPECT_EQ(r.state.sprite_x, 2);
  EXPECT_EQ(r.events.caught, 1);
  EXPECT_EQ(r.events.spawned, 1);
  EXPECT_EQ(r.state.fruit_x[0], 0);
  EXPECT_EQ(r.state.fruit_y[0], 0);
  r = step(c, r.state, kRight, make_draws(0.1f, {2}));
  EXPECT_EQ(r.state.sprite_x, 3);
  EXPECT_EQ(r.events.missed, 1);
  EXPECT_EQ(r.state.score, 0);
  EXPECT_EQ(r.state.bottomed, 2);
  EXPECT_EQ(r.state.fruit_x[0], 2);
}

TEST(Rules, LargeScreen) {
  const GameConfig c = config(1000, 700, 9, 8, 1, 50);
  GameState s = start_state(996, 999);
  EXPECT_EQ(s.sprite_x, 997);
  for (int t = 0; t < 699; ++t) {  // from y = 0 to the bottom row y = H - 1
    const StepResult r = step(c, s, kRight, make_draws(0.1f, {0}));
    s = r.state;
    ASSERT_EQ(r.events.bottomed, t == 698 ? 1 : 0) << t;
  }
  EXPECT_EQ(s.sprite_x, 999);
  EXPECT_EQ(s.score, 1);
  EXPECT_EQ(s.steps, 699);
  EXPECT_EQ(s.caught, 1);
}

TEST(Rules, StartStateAndObservation) {
  const GameConfig c = config(20, 15, 3, 3, 1, 5);
  const GameState s = start_state(4, 17);
  EXPECT_EQ(s.sprite_x, 5);
  EXPECT_EQ(s.active, 1u);
  float obs[10];
  for (float& o : obs) o = std::nanf("");
  write_observation(c, s, obs);
  const float want[10] = {5, 17, 0, 1, 0, 0, 0, 0, 0, 0};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(obs[k], want[k]) << k;
  const GameState t = make_state(3, {{6, 14, 0}, {2, 7, 1}, {9, 1, 0}});
  write_observation(c, t, obs);
  const float want2[10] = {3, 6, 14, 0, 2, 7, 1, 9, 1, 0};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(obs[k], want2[k]) << k;
}

float reference_first(int score, int bottomed) {
  const double c = double(std::max(score, 0)) / double(std::max(bottomed, 1));
  const double r = 0.1 * score + 0.5 * (std::exp(c) - 1) + 0.05;
  return static_cast<float>(std::min(std::max(r, -2.0), 2.0));
}

TEST(Rules, RewardFirstStepMatchesTheReferenceFormula) {
  for (int b = 0; b <= 8; ++b)
    for (int s = -b; s <= b; ++s) EXPECT_EQ(reward_first(s, b), reference_first(s, b)) << s << "/" << b;
  EXPECT_NEAR(reward_first(1, 1), 0.1 + 0.5 * (std::exp(1.0) - 1) + 0.05, 1e-6);
  EXPECT_FLOAT_EQ(reward_first(0, 0), 0.05f);
  EXPECT_FLOAT_EQ(reward_first(-1, 1), -0.05f);
  EXPECT_EQ(reward_first(30, 10), 2.f);  // clamped
  EXPECT_EQ(reward_first(-30, 30), -2.f);
}

TEST(Rules, RewardLaterStepsUseTheScoreChange) {
  for (int d = -6; d <= 6; ++d) {
    const double r = std::max(d, 0) + 0.5 * std::min(d, 0) - 0.01 + 0.05;
    EXPECT_EQ(reward_later(100, 100 + d), static_cast<float>(std::min(std::max(r, -2.0), 2.0))) << d;
  }
  EXPECT_FLOAT_EQ(reward_later(3, 3), 0.04f);
  EXPECT_FLOAT_EQ(reward_later(3, 4), 1.04f);
  EXPECT_FLOAT_EQ(reward_later(3, 2), -0.46f);
  EXPECT_EQ(reward_later(0, 3), 2.f);
  EXPECT_EQ(reward_later(0, -5), -2.f);
  GameState after = make_state(1, {});
  after.score = 2;
  after.bottomed = 2;
  EXPECT_EQ(step_reward(0, 0, after), reward_first(2, 2));
  EXPECT_EQ(step_reward(1, 1, after), reward_later(1, 2));
}

}  // namespace
}  // namespace grpo
