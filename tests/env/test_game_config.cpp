// GameConfig validation and the shared command-line flags.
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "env/game_config.h"
#include "cli/game_flags.h"

namespace grpo {
namespace {

std::string refusal(const GameConfig& c) {
  try {
    c.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(GameConfig, DefaultsAreTheSpecs) {
  const GameConfig c;
  EXPECT_EQ(refusal(c), "");
  EXPECT_EQ(c.obs_dim(), 10);
  EXPECT_EQ(c.groups(), 17);
}

TEST(GameConfig, EachOutOfRangeValueNamesItsFlag) {
  struct Case {
    void (*edit)(GameConfig&);
    const char* flag;
  } cases[] = {
      {[](GameConfig& c) { c.screen_width = 3; }, "--screen-width"},
      {[](GameConfig& c) { c.screen_height = 1; }, "--screen-height"},
      {[](GameConfig& c) { c.sprite_width = 0; }, "--sprite-width"},
      {[](GameConfig& c) { c.sprite_width = 21; }, "--sprite-width"},
      {[](GameConfig& c) { c.max_fruits = 0; }, "--max-fruits"},
      {[](GameConfig& c) { c.max_fruits = kMaxFruitSlots + 1; }, "--max-fruits"},
      {[](GameConfig& c) { c.min_fruits = 0; }, "--min-fruits"},
      {[](GameConfig& c) { c.min_fruits = 4; }, "--min-fruits"},
      {[](GameConfig& c) { c.min_interval_steps = -1; }, "--min-interval-steps"},
      {[](GameConfig& c) { c.win_score = 0; }, "--win-score"},
      {[](GameConfig& c) { c.fail_score = 0; }, "--fail-score"},
  };
  for (const Case& k : cases) {
    GameConfig c;
    k.edit(c);
    const std::string msg = refusal(c);
    EXPECT_EQ(msg.rfind(k.flag, 0), 0u) << k.flag << ": " << msg;
    EXPECT_NE(msg.find("got"), std::string::npos) << msg;
  }
  GameConfig edge;
  edge.screen_width = 4;
  edge.screen_height = 2;
  edge.sprite_width = 4;
  edge.max_fruits = kMaxFruitSlots;
  edge.min_fruits = kMaxFruitSlots;
  edge.min_interval_steps = 0;
  edge.win_score = 1;
  edge.fail_score = -1;
  EXPECT_EQ(refusal(edge), "");
}

TEST(GameFlags, ParseIntoTheConfig) {
  CLI::App app;
  GameConfig c;
  add_game_flags(app, c);
  const char* argv[] = {"x", "--screen-width", "31", "--screen-height", "9", "--sprite-width",
                        "5", "--max-fruits",   "6",  "--min-fruits",    "2", "--min-interval-steps",
                        "0", "--win-score",    "7",  "--fail-score",    "-8"};
  app.parse(int(std::size(argv)), const_cast<char**>(argv));
  EXPECT_EQ(c.screen_width, 31);
  EXPECT_EQ(c.screen_height, 9);
  EXPECT_EQ(c.sprite_width, 5);
  EXPECT_EQ(c.max_fruits, 6);
  EXPECT_EQ(c.min_fruits, 2);
  EXPECT_EQ(c.min_interval_steps, 0);
  EXPECT_EQ(c.win_score, 7);
  EXPECT_EQ(c.fail_score, -8);
  EXPECT_EQ(refusal(c), "");
}

}  // namespace
}  // namespace grpo
