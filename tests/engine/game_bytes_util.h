// The games' states in a downloaded arena against the host twin's, byte for byte: shared by the
// tests of the rollout's start and of its step (test_rollout_start_cuda.cpp,
// test_rollout_step_cuda.cpp), so both check every array of GamesView.
#pragma once
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "env/games.h"

namespace grpo::test {

// `got`: the device's arena, downloaded; `host`: where the host twin's arena begins, which holds
// `games`. Every array of games, each named in the failure it causes.
inline void expect_same_game_bytes(const std::vector<char>& got, const void* host, const GamesView& games) {
  const size_t n = size_t(games.n), slots = n * size_t(games.max_fruits);
  const auto same = [&](const void* p, size_t words, const char* what) {
    const size_t off = size_t(static_cast<const char*>(p) - static_cast<const char*>(host));
    ASSERT_LE(off + words * 4, got.size()) << what << " outside the arena";
    EXPECT_EQ(std::memcmp(got.data() + off, p, words * 4), 0) << what;
  };
  same(games.sprite_x, n, "sprites");
  same(games.active, n, "active fruits");
  same(games.fruit_x, slots, "fruit columns");
  same(games.fruit_y, slots, "fruit rows");
  same(games.score, n, "scores");
  same(games.steps, n, "steps");
  same(games.bottomed, n, "fruits bottomed");
  same(games.caught, n, "fruits caught");
}

}  // namespace grpo::test
