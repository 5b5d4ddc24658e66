// The vectorised host executor: layout, resets, the draw mapping, and invariants over long
// random runs.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "env/games.h"
#include "core/rng.h"
#include "tests/env/rules_fixture.h"
#include "tests/test_util.h"

namespace grpo {
namespace {
using test::config;

struct HostGames {
  std::vector<unsigned char> block;
  GamesView view;
  HostGames(const GameConfig& c, int n) : block(games_state_bytes(c, n), 0xAB) {
    view = make_games_view(c, n, block.data());
  }
};

TEST(GamesLayout, ArraysAreAlignedDisjointAndInsideTheBlock) {
  const GameConfig c = config(20, 15, 3, 5, 1, 5);
  const int n = 77;
  const size_t bytes = games_state_bytes(c, n);
  EXPECT_EQ(bytes % 256, 0u);
  std::vector<unsigned char> block(bytes + 256);
  unsigned char* base = block.data() + (256 - reinterpret_cast<uintptr_t>(block.data()) % 256);
  const GamesView v = make_games_view(c, n, base);
  struct Span {
    const void* p;
    size_t len;
  } spans[] = {{v.sprite_x, 4u * n}, {v.active, 4u * n}, {v.fruit_x, 4u * n * 5}, {v.fruit_y, 4u * n * 5},
               {v.score, 4u * n},    {v.steps, 4u * n},  {v.bottomed, 4u * n},    {v.caught, 4u * n}};
  for (size_t a = 0; a < std::size(spans); ++a) {
    const auto* pa = static_cast<const unsigned char*>(spans[a].p);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pa) % 256, 0u) << a;
    EXPECT_GE(pa, base);
    EXPECT_LE(pa + spans[a].len, base + bytes) << a;
    for (size_t b = a + 1; b < std::size(spans); ++b) {
      const auto* pb = static_cast<const unsigned char*>(spans[b].p);
      EXPECT_TRUE(pa + spans[a].len <= pb || pb + spans[b].len <= pa) << a << " overlaps " << b;
    }
  }
}

TEST(GamesLayout, StoreThenLoadRoundTrips) {
  const GameConfig c = config(20, 15, 3, 7, 1, 5);
  HostGames h(c, 13);
  std::mt19937 gen(7);
  std::vector<GameState> want(13);
  for (int g = 0; g < 13; ++g) {
    GameState s = start_state(0, 0);
    s.sprite_x = gen() % 20;
    s.active = gen() & 0x7F;
    for (int i = 0; i < 7; ++i) {
      s.fruit_x[i] = gen() % 20;
      s.fruit_y[i] = gen() % 15;
    }
    s.score = int(gen() % 100) - 50;
    s.steps = gen() % 1000;
    s.bottomed = gen() % 100;
    s.caught = gen() % 100;
    want[g] = s;
    h.view.store(g, s);
  }
  for (int g = 0; g < 13; ++g) {
    const GameState s = h.view.load(g);
    EXPECT_EQ(std::memcmp(&s, &want[g], sizeof s), 0) << g;
  }
}

// word_address(g, w) holds word w of load(g) (null: a slot load reads as 0): the fused rollout
// step's lanes copy a state a word each.
// Random states over poisoned memory, the slots past max_fruits never stored (load reads them as
// 0), for every slot count; Slots<3> where max_fruits is 3.
TEST(GamesLayout, WordAddressesAreLoadAWordAtATime) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 gen(seed);
  for (int fruits = 1; fruits <= kMaxFruitSlots; ++fruits) {
    const GameConfig c = config(20, 15, 3, fruits, 1, 5);
    const int n = 1 + int(gen() % 40);
    HostGames h(c, n);
    for (int g = 0; g < n; ++g) {
      GameState s;
      auto* words = reinterpret_cast<uint32_t*>(&s);
      for (unsigned w = 0; w < kGameStateWords; ++w) words[w] = uint32_t(gen());
      h.view.store(g, s);
    }
    const auto word_at = [](const uint32_t* p) { return p ? *p : 0u; };
    const auto words_of = [](const GameState& s, unsigned w) {
      uint32_t v;
      std::memcpy(&v, reinterpret_cast<const unsigned char*>(&s) + 4 * w, 4);
      return v;
    };
    for (int g = 0; g < n; ++g) {
      const GameState any = h.view.load<AnySlots>(g);
      for (unsigned w = 0; w < kGameStateWords; ++w) {
        ASSERT_EQ(word_at(h.view.word_address<AnySlots>(g, w)), words_of(any, w))
            << fruits << " fruits, game " << g << ", word " << w;
        if (fruits == 3) {
          ASSERT_EQ(word_at(h.view.word_address<Slots<3>>(g, w)), words_of(h.view.load<Slots<3>>(g), w))
              << "game " << g << ", word " << w;
        }
      }
    }
  }
}

TEST(GamesReset, ReplicasShareTheirGroupsDrawnStart) {
  const GameConfig c = config(23, 15, 3, 4, 1, 5);
  const int R = 5, n = c.groups() * R;
  HostGames h(c, n);
  std::vector<float> obs = test::poisoned(size_t(n) * c.obs_dim());
  const uint32_t epoch = 12;
  games_reset_host(c, h.view, R, 99, &epoch, obs.data());
  std::vector<int> xs;
  for (int g = 0; g < n; ++g) {
    const int group = g / R;
    const int x = int(bits_to_index(draw4(99, Purpose::StartFruit, 12, 0, group).x, 23));
    xs.push_back(x);
    const GameState s = h.view.load(g);
    EXPECT_EQ(s.sprite_x, group + 1);
    EXPECT_EQ(s.active, 1u);
    EXPECT_EQ(s.fruit_x[0], x);
    EXPECT_EQ(s.score | s.steps | s.bottomed | s.caught, 0);
    const float want[13] = {float(group + 1), float(x), 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 13; ++k) ASSERT_EQ(obs[size_t(g) * 13 + k], want[k]) << g << "," << k;
  }
  // Another epoch draws other start fruits (20 groups all equal by chance: ~0).
  const uint32_t next = 13;
  games_reset_host(c, h.view, R, 99, &next, obs.data());
  int same = 0;
  for (int g = 0; g < n; g += R) same += h.view.load(g).fruit_x[0] == xs[g];
  EXPECT_LT(same, c.groups());
  EXPECT_THROW(games_reset_host(c, h.view, R + 1, 99, &next, obs.data()), std::invalid_argument);
}

TEST(GamesDraws, WordMappingAcrossPhiloxBlocks) {
  for (int fmax : {1, 3, 4, 7, 8}) {
    const StepDraws d = spawn_draws(29, fmax, 5, 3, 17, 41);
    const Bits4 b0 = draw4(5, Purpose::Spawn, 3, 17, 41, 0);
    const Bits4 b1 = draw4(5, Purpose::Spawn, 3, 17, 41, 1);
    const Bits4 b2 = draw4(5, Purpose::Spawn, 3, 17, 41, 2);
    const uint32_t w[9] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w, b2.x};
    EXPECT_EQ(d.coin, bits_to_uniform(w[0]));
    for (int j = 0; j < fmax; ++j) EXPECT_EQ(d.spawn_x[j], int(bits_to_index(w[j + 1], 29))) << fmax << " " << j;
  }
}

// Long random runs on several configurations: after every step the invariants hold, the
// observations and rewards match the state, and the Philox source equals explicit draws.
void random_run(const GameConfig& c, int R, int T, uint64_t seed) {
  const int n = c.groups() * R, D = c.obs_dim(), F = c.max_fruits;
  HostGames h(c, n), twin(c, n);
  std::vector<float> obs = test::poisoned(size_t(n) * D), obs_twin(obs), reward(n), reward_twin(n);
  const uint32_t epoch = 3;
  games_reset_host(c, h.view, R, seed, &epoch, obs.data());
  games_reset_host(c, twin.view, R, seed, &epoch, obs_twin.data());
  std::mt19937 gen{uint32_t(seed)};
  std::vector<int32_t> actions(n), spawn_x(size_t(n) * F);
  std::vector<float> coins(n);
  std::vector<GameState> prev(n);
  long long spawned = 0, caught = 0;
  for (int t = 0; t < T; ++t) {
    for (auto& a : actions) a = int32_t(gen() % 3);
    for (int g = 0; g < n; ++g) {
      prev[g] = h.view.load(g);
      const StepDraws d = spawn_draws(c.screen_width, F, seed, epoch, t, g);
      coins[g] = d.coin;
      for (int j = 0; j < F; ++j) spawn_x[size_t(g) * F + j] = d.spawn_x[j];
    }
    std::fill(reward.begin(), reward.end(), test::poison_value());
    std::fill(obs.begin(), obs.end(), test::poison_value());
    games_step_host(c, h.view, actions.data(), seed, &epoch, uint32_t(t), reward.data(), obs.data());
    games_step_explicit_host(c, twin.view, actions.data(), coins.data(), spawn_x.data(), uint32_t(t),
                             reward_twin.data(), obs_twin.data());
    ASSERT_EQ(std::memcmp(h.block.data(), twin.block.data(), h.block.size()), 0) << t;
    ASSERT_EQ(std::memcmp(obs.data(), obs_twin.data(), obs.size() * 4), 0) << t;
    ASSERT_EQ(std::memcmp(reward.data(), reward_twin.data(), reward.size() * 4), 0) << t;
    for (int g = 0; g < n; ++g) {
      const GameState s = h.view.load(g), p = prev[g];
      const int na = active_count(s);
      ASSERT_GE(na, 1) << t;
      ASSERT_LE(na, F) << t;
      ASSERT_EQ(s.active >> F, 0u);
      ASSERT_EQ(s.steps, p.steps + 1);
      ASSERT_GE(s.bottomed, p.bottomed);
      ASSERT_GE(s.caught, p.caught);
      ASSERT_LE(s.caught, s.bottomed);
      // score = caught - missed, and every bottomed fruit was caught or missed (none leave off screen
      // from a reachable state): score = caught - (bottomed - caught).
      ASSERT_EQ(s.score, 2 * s.caught - s.bottomed) << t;
      ASSERT_LE(std::abs(s.score - p.score), F);
      ASSERT_GE(s.sprite_x, 0);
      ASSERT_LT(s.sprite_x, c.screen_width);
      for (int i = 0; i < F; ++i) {
        ASSERT_GE(s.fruit_x[i], 0);
        ASSERT_LT(s.fruit_x[i], c.screen_width);
        if (slot_active(s, i)) {
          ASSERT_LT(s.fruit_y[i], c.screen_height - 1);
        }
        if (!slot_active(s, i) && !slot_active(p, i)) {
          ASSERT_EQ(s.fruit_x[i], p.fruit_x[i]);  // inactive fruits do not move
          ASSERT_EQ(s.fruit_y[i], p.fruit_y[i]);
        }
        spawned += slot_active(s, i) && s.fruit_y[i] == 0;
      }
      float row[1 + 3 * kMaxFruitSlots];
      write_observation(c, s, row);
      ASSERT_EQ(std::memcmp(row, &obs[size_t(g) * D], size_t(D) * 4), 0);
      ASSERT_EQ(reward[g], grpo::step_reward(uint32_t(t), p.score, s));
      ASSERT_GE(reward[g], -2.f);
      ASSERT_LE(reward[g], 2.f);
    }
  }
  for (int g = 0; g < n; ++g) caught += h.view.load(g).caught;
  EXPECT_GT(spawned, n);  // the run did spawn and catch: the checks above saw real play
  EXPECT_GT(caught, 0);
}

TEST(GamesInvariants, DefaultConfig) { random_run(GameConfig{}, 3, 600, 11); }
TEST(GamesInvariants, ManyFruitsNoInterval) { random_run(config(21, 9, 3, 7, 2, 0), 2, 500, 12); }
TEST(GamesInvariants, EightSlotsWideSprite) { random_run(config(13, 6, 5, 8, 3, 1), 3, 500, 13); }
TEST(GamesInvariants, SpriteWidthOneTinyScreen) { random_run(config(4, 2, 1, 1, 1, 0), 7, 800, 14); }
TEST(GamesInvariants, LargeScreen) { random_run(config(67, 120, 4, 5, 1, 9), 1, 700, 15); }

// step_one_game compiles the default three slots apart (Slots<3>: loops three long, no tests of
// max_fruits). The same arithmetic on the same slots: every state, reward and observation of
// random play equals the code for any slot count (AnySlots), bit for bit, with Philox and with
// explicit draws, from the first step (its own reward formula) to states with every slot full,
// fruits off screen and the spawn gate shut.
// triples: whether the run must spawn three fruits in one step (the third spawn's x'_2 read).
void three_slots_match_any(const GameConfig& c, int R, int T, uint64_t seed, bool triples = false) {
  ASSERT_EQ(c.max_fruits, 3);
  const int n = c.groups() * R, D = c.obs_dim();
  HostGames three(c, n), any(c, n);
  const uint32_t epoch = uint32_t(seed % 1000);
  std::vector<float> obs_three = test::poisoned(size_t(n) * D), obs_any(obs_three);
  games_reset_host(c, three.view, R, seed, &epoch, obs_three.data());
  games_reset_host(c, any.view, R, seed, &epoch, obs_any.data());
  std::mt19937_64 gen(seed);
  std::vector<int32_t> actions(n), spawn_x(size_t(n) * 3);
  std::vector<float> coins(n);
  long long full = 0, spawned = 0, three_at_once = 0;
  for (int t = 0; t < T; ++t) {
    for (auto& a : actions) a = int32_t(gen() % 3);
    for (auto& x : spawn_x) x = int32_t(gen() % uint64_t(c.screen_width));
    for (auto& u : coins) u = float(gen() % 1000) / 1000.f;
    const bool philox = t % 2 == 0;  // both sources, alternating
    const PhiloxDrawSource from_philox{c.screen_width, 3, seed, epoch, uint32_t(t)};
    const ExplicitDrawSource from_arrays{3, coins.data(), spawn_x.data()};
    std::vector<float> r_three = test::poisoned(size_t(n)), r_any(r_three);
    std::vector<float> o_three = test::poisoned(size_t(n) * D), o_any(o_three);
    std::vector<float> copy_three = test::poisoned(size_t(n) * D), copy_any(copy_three);
    for (int g = 0; g < n; ++g) {
      float* ct = &copy_three[size_t(g) * D];
      float* ca = &copy_any[size_t(g) * D];
      if (philox) {
        step_one_game_slots<Slots<3>>(c, three.view, g, actions[size_t(g)], from_philox, uint32_t(t), r_three.data(),
                                      o_three.data(), ct);
        step_one_game_slots<AnySlots>(c, any.view, g, actions[size_t(g)], from_philox, uint32_t(t), r_any.data(),
                                      o_any.data(), ca);
      } else {
        step_one_game_slots<Slots<3>>(c, three.view, g, actions[size_t(g)], from_arrays, uint32_t(t), r_three.data(),
                                      o_three.data(), ct);
        step_one_game_slots<AnySlots>(c, any.view, g, actions[size_t(g)], from_arrays, uint32_t(t), r_any.data(),
                                      o_any.data(), ca);
      }
    }
    ASSERT_EQ(three.block, any.block) << "step " << t << ", seed " << seed;
    ASSERT_EQ(std::memcmp(r_three.data(), r_any.data(), r_any.size() * 4), 0) << "step " << t << ", seed " << seed;
    ASSERT_EQ(std::memcmp(o_three.data(), o_any.data(), o_any.size() * 4), 0) << "step " << t << ", seed " << seed;
    ASSERT_EQ(std::memcmp(copy_three.data(), o_three.data(), o_three.size() * 4), 0) << "step " << t;
    ASSERT_EQ(std::memcmp(copy_any.data(), o_any.data(), o_any.size() * 4), 0) << "step " << t;
    for (int g = 0; g < n; ++g) {
      const GameState s = any.view.load(g);
      full += active_count(s) == 3;
      spawned += slot_active(s, 0) && s.fruit_y[0] == 0;
      three_at_once += s.active == 7u && s.fruit_y[0] == 0 && s.fruit_y[1] == 0 && s.fruit_y[2] == 0;
      ASSERT_EQ(three.view.load<Slots<3>>(g).score, s.score);
    }
  }
  EXPECT_GT(full, 0) << "no state of the run had every slot full";
  EXPECT_GT(spawned, 0);
  if (triples) {
    EXPECT_GT(three_at_once, 0) << "no step spawned three fruits";
  }
}

TEST(GamesStep, ThreeSlotCodeIsTheAnySlotCodeBitForBit) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  three_slots_match_any(GameConfig{}, 2, 300, seed);
  three_slots_match_any(config(9, 4, 1, 3, 2, 0), 3, 200, seed + 1);        // no gate, two fruits at least
  three_slots_match_any(config(30, 25, 5, 3, 2, 7), 1, 300, seed + 2);      // a tall screen, a long gate
  three_slots_match_any(config(4, 3, 3, 3, 3, 2), 4, 200, seed + 3, true);  // the gate syncs them: three at once
}

TEST(GamesStep, ThreeSlotDrawsAreTheAnySlotDrawsForTheSlotsTheyHave) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 gen(seed);
  for (int i = 0; i < 200; ++i) {
    const int W = 4 + int(gen() % 60);
    const uint32_t epoch = uint32_t(gen()), t = uint32_t(gen() % 1000), game = uint32_t(gen() % 5000);
    const StepDraws three = spawn_draws<Slots<3>>(W, 3, seed, epoch, t, game);
    const StepDraws any = spawn_draws<AnySlots>(W, 3, seed, epoch, t, game);
    ASSERT_EQ(std::memcmp(&three.coin, &any.coin, sizeof(float)), 0) << "seed " << seed;
    for (int j = 0; j < 3; ++j) ASSERT_EQ(three.spawn_x[j], any.spawn_x[j]) << "seed " << seed << ", j " << j;
    for (int j = 3; j < kMaxFruitSlots; ++j) ASSERT_EQ(three.spawn_x[j], 0);
  }
}

// A caller that drew the first Philox block ahead (the rollout's thread 0, before its barrier's
// wait) gets the same draws for any slot count; the block it passes is the one taken (a
// different one moves the coin), and the words past it are still drawn.
TEST(GamesDraws, AFirstBlockDrawnAheadGivesTheSameDraws) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 gen(seed);
  for (int i = 0; i < 200; ++i) {
    const int W = 4 + int(gen() % 60), fmax = 1 + int(gen() % kMaxFruitSlots);
    const uint32_t epoch = uint32_t(gen()), t = uint32_t(gen() % 1000), game = uint32_t(gen() % 5000);
    const Bits4 b0 = spawn_block0(seed, epoch, t, game);
    const StepDraws any = spawn_draws<AnySlots>(W, fmax, seed, epoch, t, game);
    const StepDraws ahead = spawn_draws<AnySlots>(W, fmax, seed, epoch, t, game, &b0);
    ASSERT_EQ(std::memcmp(&any, &ahead, sizeof any), 0) << "seed " << seed << ", max_fruits " << fmax;
    const StepDraws three = spawn_draws<Slots<3>>(W, 3, seed, epoch, t, game);
    const StepDraws three_ahead = spawn_draws<Slots<3>>(W, 3, seed, epoch, t, game, &b0);
    ASSERT_EQ(std::memcmp(&three, &three_ahead, sizeof three), 0) << "seed " << seed;
    Bits4 other = b0;
    other.x ^= 0x80000000u;  // the coin's top bit
    const StepDraws moved = spawn_draws<AnySlots>(W, fmax, seed, epoch, t, game, &other);
    ASSERT_NE(moved.coin, any.coin) << "seed " << seed;
  }
}

TEST(GamesStep, IsDeterministicAndWritesObservationsOnlyWhenAsked) {
  const GameConfig c;
  const int R = 2, n = c.groups() * R;
  HostGames a(c, n), b(c, n);
  std::vector<float> obs(size_t(n) * c.obs_dim()), ra(n), rb(n);
  const uint32_t epoch = 1;
  games_reset_host(c, a.view, R, 4, &epoch, obs.data());
  games_reset_host(c, b.view, R, 4, &epoch, obs.data());
  std::vector<int32_t> actions(n);
  std::mt19937 gen(3);
  for (uint32_t t = 0; t < 50; ++t) {
    for (auto& x : actions) x = int32_t(gen() % 3);
    games_step_host(c, a.view, actions.data(), 4, &epoch, t, ra.data(), nullptr);
    games_step_host(c, b.view, actions.data(), 4, &epoch, t, rb.data(), obs.data());
    ASSERT_EQ(ra, rb);
  }
  EXPECT_EQ(a.block, b.block);
}

}  // namespace
}  // namespace grpo
