// The baseline agents of grpo eval (engine/play/baseline_agents.h): the heuristic's choice on
// hand-made and on reachable states, the random agent's draws, and both played through
// play_games independently of how the games are chunked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "engine/play/baseline_agents.h"
#include "engine/play/play_games.h"
#include "kernels/policy_head.h"

namespace grpo::test {
namespace {

// A state with the sprite at sprite_x and the given slots (x, y, active); the other slots inactive.
struct Slot {
  int32_t x, y;
  bool active;
};
GameState state_with(int32_t sprite_x, const std::vector<Slot>& slots) {
  GameState s = start_state(0, 0);
  s.sprite_x = sprite_x;
  s.active = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    s.fruit_x[i] = slots[i].x;
    s.fruit_y[i] = slots[i].y;
    if (slots[i].active) s.active |= 1u << i;
  }
  return s;
}

TEST(HeuristicAgent, ChasesTheLowestActiveFruit) {
  const GameConfig g;  // 20 x 15, 3 slots
  // Slot 1 is lower (larger y: nearer the sprite's row) than slot 0: chase it, away from slot 0.
  EXPECT_EQ(heuristic_action(g, state_with(10, {{3, 2, true}, {15, 8, true}})), kRight);
  EXPECT_EQ(heuristic_action(g, state_with(10, {{17, 2, true}, {4, 8, true}})), kLeft);
  // An inactive slot keeps its old x and y (spec): it is no fruit to chase, however low.
  EXPECT_EQ(heuristic_action(g, state_with(10, {{3, 2, true}, {15, 13, false}})), kLeft);
  // Aligned with the lowest fruit: stay, even when a higher fruit is elsewhere.
  EXPECT_EQ(heuristic_action(g, state_with(15, {{3, 2, true}, {15, 8, true}})), kStay);
  // Equally low fruits: the smallest slot wins.
  EXPECT_EQ(heuristic_action(g, state_with(10, {{2, 7, true}, {12, 3, true}, {18, 7, true}})), kLeft);
  EXPECT_EQ(heuristic_action(g, state_with(10, {{2, 3, true}, {18, 7, true}, {2, 7, true}})), kRight);
  // No fruit falling: stay.
  EXPECT_EQ(heuristic_action(g, state_with(10, {{3, 2, false}, {15, 8, false}})), kStay);
  // At the screen's edges the move still points at the fruit.
  EXPECT_EQ(heuristic_action(g, state_with(0, {{19, 1, true}})), kRight);
  EXPECT_EQ(heuristic_action(g, state_with(19, {{0, 1, true}})), kLeft);
}

// On every state that random play reaches, over several game shapes, the heuristic's move brings
// the sprite one column nearer the lowest fruit (found here independently), or stays above it.
TEST(HeuristicAgent, NeverMovesAwayFromTheLowestFruit) {
  std::vector<GameConfig> shapes(3);
  shapes[1].screen_width = 7;
  shapes[1].screen_height = 5;
  shapes[1].max_fruits = 1;
  shapes[2].screen_width = 33;
  shapes[2].max_fruits = 8;
  shapes[2].min_fruits = 3;
  shapes[2].min_interval_steps = 0;
  int checked = 0, moves = 0;
  for (const GameConfig& g : shapes) {
    PlayOptions o;
    o.games = 40;
    o.max_steps = 150;
    o.seed = 77;
    RandomAgent random;
    play_games(g, random, o, [&](int, const std::vector<GameState>& states) {
      for (const GameState& s : states) {
        int lowest = -1;
        for (int i = g.max_fruits - 1; i >= 0; --i)  // from the last slot, so the smallest wins ties
          if (slot_active(s, i) && (lowest < 0 || s.fruit_y[i] >= s.fruit_y[lowest])) lowest = i;
        const int32_t a = heuristic_action(g, s);
        if (lowest < 0) {
          EXPECT_EQ(a, kStay);
          continue;
        }
        const int32_t before = std::abs(s.sprite_x - s.fruit_x[lowest]);
        const int32_t after = std::abs(std::clamp(s.sprite_x + a - 1, 0, g.screen_width - 1) - s.fruit_x[lowest]);
        if (before == 0) {
          EXPECT_EQ(a, kStay);
        } else {
          EXPECT_EQ(after, before - 1) << "sprite " << s.sprite_x << ", lowest fruit x " << s.fruit_x[lowest];
        }
        ++checked;
        moves += a != kStay;
      }
    });
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(moves, 1000);  // the property was tested on moves, not only on stays
}

TEST(RandomAgent, UniformOverTheThreeActionsAndKeyedBySeedStepAndGame) {
  constexpr int kDraws = 30000;
  int count[3] = {0, 0, 0};
  int same_seed2 = 0, same_policy_draw = 0;
  for (uint32_t k = 0; k < kDraws; ++k) {
    const uint32_t t = k % 300, game = k / 300;
    const int32_t a = random_action(5, t, game);
    ASSERT_GE(a, 0);
    ASSERT_LE(a, 2);
    ++count[a];
    EXPECT_EQ(random_action(5, t, game), a) << "a pure function of (seed, step, game)";
    same_seed2 += random_action(6, t, game) == a;
    // Its own stream: not the one that samples a policy's actions.
    same_policy_draw += int32_t(std::floor(action_uniform(5, 0, t, game) * 3.f)) == a;
  }
  const double sigma = std::sqrt(kDraws * (1.0 / 3) * (2.0 / 3));
  for (int c : count) EXPECT_NEAR(c, kDraws / 3.0, 5 * sigma);
  EXPECT_NEAR(same_seed2, kDraws / 3.0, 5 * sigma) << "another seed draws independently";
  EXPECT_NEAR(same_policy_draw, kDraws / 3.0, 5 * sigma);
}

// The existing streams keep their keys: a new purpose must not renumber them.
TEST(RandomAgent, PurposeValuesAreStable) {
  EXPECT_EQ(uint32_t(Purpose::StartFruit), 1u);
  EXPECT_EQ(uint32_t(Purpose::Spawn), 2u);
  EXPECT_EQ(uint32_t(Purpose::Action), 3u);
  EXPECT_EQ(uint32_t(Purpose::DropoutRollout), 4u);
  EXPECT_EQ(uint32_t(Purpose::DropoutLoss), 5u);
  EXPECT_EQ(uint32_t(Purpose::Init), 6u);
  EXPECT_EQ(uint32_t(Purpose::RandomAgent), 7u);
}

bool same_outcomes(const std::vector<GameOutcome>& a, const std::vector<GameOutcome>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const GameState &x = a[i].final, &y = b[i].final;
    if (a[i].end != b[i].end || x.score != y.score || x.steps != y.steps || x.caught != y.caught ||
        x.bottomed != y.bottomed || x.sprite_x != y.sprite_x)
      return false;
  }
  return true;
}

// eval plays in chunks: game i's play may depend on its global index only.
TEST(BaselineAgents, PlayTheSameGamesWhateverTheChunks) {
  const GameConfig g;
  HeuristicAgent heuristic;
  RandomAgent random;
  for (Agent* agent : std::vector<Agent*>{&heuristic, &random}) {
    PlayOptions o;
    o.games = 30;
    o.max_steps = 120;
    o.seed = 9;
    const std::vector<GameOutcome> whole = play_games(g, *agent, o);
    std::vector<GameOutcome> parts;
    for (int first = 0; first < 30; first += 7) {
      PlayOptions p = o;
      p.first_game = first;
      p.games = std::min(7, 30 - first);
      const std::vector<GameOutcome> part = play_games(g, *agent, p);
      parts.insert(parts.end(), part.begin(), part.end());
    }
    EXPECT_TRUE(same_outcomes(whole, parts));
    o.seed = 10;
    EXPECT_FALSE(same_outcomes(whole, play_games(g, *agent, o))) << "another seed, other games";
  }
}

// The point of a baseline: chasing the lowest fruit catches about two fruits in three and
// stays ahead, random play catches one in seven and sinks (default game, 200-step cap).
TEST(BaselineAgents, HeuristicFarAheadOfRandom) {
  const GameConfig g;
  PlayOptions o;
  o.games = 100;
  o.max_steps = 200;
  HeuristicAgent heuristic;
  RandomAgent random;
  const EvalSummary h = summarize(play_games(g, heuristic, o)), r = summarize(play_games(g, random, o));
  EXPECT_GT(h.catch_rate, 0.6);
  EXPECT_LT(r.catch_rate, 0.25);
  EXPECT_GT(h.mean_score, r.mean_score + 25);
}

}  // namespace
}  // namespace grpo::test
