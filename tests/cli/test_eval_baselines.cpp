// grpo eval's baseline agents (--agent heuristic|random) and --compare: reproducible per seed,
// the same games as the library plays, the game from the flags or the checkpoint, the heuristic
// far ahead of random, both columns of a comparison, and every misuse refused (exit 2, one line).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/play/baseline_agents.h"
#include "engine/play/play_games.h"
#include "tests/cli/grpo_run.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class EvalBaselines : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("grpo_eb_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const TrainConfig c = tiny_config();  // a 6 x 6 screen
    auto ex = make_host_executor(c);
    ckpt_ = (dir_ / "tiny.safetensors").string();
    save_checkpoint(ckpt_, c, run_epochs(c, *ex, 2), 0.5f, 1);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (!fs::exists(kGrpo)) GTEST_SKIP() << "grpo binary not built";
  }
  // `eval ARGS --json`, parsed; fails the test unless it exits 0.
  static json eval_json(const std::string& args) {
    const Out r = run("eval " + args + " --json");
    EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
    return r.code == 0 ? json::parse(r.out) : json();
  }
  static fs::path dir_;
  static std::string ckpt_;
};
fs::path EvalBaselines::dir_;
std::string EvalBaselines::ckpt_;

TEST_F(EvalBaselines, ReproduciblePerSeedAndRandomDependsOnIt) {
  for (const std::string agent : {"heuristic", "random"}) {
    const std::string args = "eval --agent " + agent + " --games 40 --max-steps 80 --json --seed ";
    const Out a = run(args + "3"), b = run(args + "3"), c = run(args + "4");
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << agent << ": same seed, same evaluation";
    EXPECT_NE(a.out, c.out) << agent << ": another seed, other games";
    EXPECT_EQ(json::parse(a.out)["agent"], agent);
    EXPECT_TRUE(json::parse(a.out)["checkpoint"].is_null());
  }
}

// More games than eval's chunk: the binary's figures equal one batch played by the library, so
// the chunks change nothing and the agent meets the games play_games deals.
TEST_F(EvalBaselines, SameGamesAsTheLibraryInOneBatch) {
  GameConfig g;
  g.screen_width = 12;
  g.win_score = 8;
  const json j = eval_json("--agent random --screen-width 12 --win-score 8 --games 300 --max-steps 90 --seed 11");
  PlayOptions o;
  o.games = 300;
  o.max_steps = 90;
  o.seed = 11;
  RandomAgent random;
  const EvalSummary s = summarize(play_games(g, random, o));
  EXPECT_EQ(j["games"], 300);
  EXPECT_EQ(j["caught"].get<int64_t>(), s.caught);
  EXPECT_EQ(j["bottomed"].get<int64_t>(), s.bottomed);
  EXPECT_DOUBLE_EQ(j["mean_score"].get<double>(), s.mean_score);
  EXPECT_DOUBLE_EQ(j["win_rate"].get<double>(), s.win_rate);
  EXPECT_DOUBLE_EQ(j["mean_steps"].get<double>(), s.mean_steps);
}

TEST_F(EvalBaselines, GameFromTheFlagsWithTrainsDefaultsOrFromTheCheckpoint) {
  const json d = eval_json("--agent heuristic --games 3");
  const GameConfig train_default = TrainConfig().game;
  EXPECT_EQ(d["screen_width"], train_default.screen_width);
  EXPECT_EQ(d["screen_height"], train_default.screen_height);
  EXPECT_EQ(d["max_fruits"], train_default.max_fruits);
  EXPECT_EQ(d["win_score"], train_default.win_score);
  const json f = eval_json("--agent heuristic --games 3 --screen-width 9 --screen-height 7 --fail-score -4");
  EXPECT_EQ(f["screen_width"], 9);
  EXPECT_EQ(f["screen_height"], 7);
  EXPECT_EQ(f["fail_score"], -4);
  const json c = eval_json("--agent random --games 3 --checkpoint " + ckpt_ + " --win-score 5");
  EXPECT_EQ(c["screen_width"], tiny_config().game.screen_width);
  EXPECT_EQ(c["min_interval_steps"], tiny_config().game.min_interval_steps);
  EXPECT_EQ(c["win_score"], 5);
  EXPECT_EQ(c["checkpoint"], ckpt_);
}

// Over three seeds of 100 games at the default game and a 200-step cap.
TEST_F(EvalBaselines, HeuristicFarAheadOfRandom) {
  for (const char* seed : {"1", "2", "3"}) {
    const std::string common = " --games 100 --max-steps 200 --seed " + std::string(seed);
    const json h = eval_json("--agent heuristic" + common), r = eval_json("--agent random" + common);
    EXPECT_GT(h["catch_rate"].get<double>(), 0.6) << "seed " << seed;
    EXPECT_LT(r["catch_rate"].get<double>(), 0.25) << "seed " << seed;
    EXPECT_GT(h["mean_score"].get<double>(), r["mean_score"].get<double>() + 25) << "seed " << seed;
  }
}

// Each column of a comparison is what eval prints for that agent alone.
TEST_F(EvalBaselines, CompareJsonHasOneEntryPerAgent) {
  const std::string common = "--checkpoint " + ckpt_ + " --games 30 --max-steps 50 --seed 2";
  for (const std::string base : {"heuristic", "random"}) {
    const json both = eval_json(common + " --compare " + base);
    ASSERT_EQ(both.size(), 2u) << both.dump();
    EXPECT_EQ(both["policy"], eval_json(common));
    EXPECT_EQ(both[base], eval_json(common + " --agent " + base));
    EXPECT_EQ(both["policy"]["policy"], "sampled");
  }
  const json greedy = eval_json(common + " --greedy --compare random");
  EXPECT_EQ(greedy["policy"], eval_json(common + " --greedy"));
}

TEST_F(EvalBaselines, CompareTextIsATableWithAColumnPerAgent) {
  const Out r = run("eval --checkpoint " + ckpt_ + " --games 20 --max-steps 40 --compare heuristic");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sampled policy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("heuristic agent"), std::string::npos) << r.out;
  const json p = eval_json("--checkpoint " + ckpt_ + " --games 20 --max-steps 40");
  const json h = eval_json("--checkpoint " + ckpt_ + " --games 20 --max-steps 40 --agent heuristic");
  char want[128];
  std::snprintf(want, sizeof want, "catch rate    %20.4f  %18.4f\n", p["catch_rate"].get<double>(),
                h["catch_rate"].get<double>());
  EXPECT_NE(r.out.find(want), std::string::npos) << "want \"" << want << "\" in\n" << r.out;
  for (const char* k : {"mean score", "win rate", "loss rate", "step cap", "mean steps"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k;
  const Out one = run("eval --agent random --games 5 --max-steps 10");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("random agent"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("catch rate"), std::string::npos) << one.out;
}

// Every misuse: exit 2, one line on stderr naming the culprit, nothing on stdout.
TEST_F(EvalBaselines, MisuseIsRefusedInOneLine) {
  const std::string ck = " --checkpoint " + ckpt_;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--agent foo", "--agent"},
      {"", "--checkpoint"},  // the default agent is the policy
      {"--agent policy", "--checkpoint"},
      {"--agent heuristic --compare random", "--compare"},
      {ck + " --compare policy", "--compare"},
      {ck + " --compare foo", "--compare"},
      {ck + " --agent random --compare heuristic", "--agent"},
      {"--agent heuristic --greedy", "--greedy"},
      {"--agent random --sampled", "--sampled"},
      {"--agent random --dropout 0.1", "--dropout"},
      {ck + " --agent heuristic --screen-width 12", "--screen-width"},
      {ck + " --min-fruits 2", "--min-fruits"},
      {"--agent heuristic --screen-width 3", "--screen-width"},
      {"--agent heuristic --screen-width 0x10", "--screen-width"},
      {"--agent heuristic --win-score 0", "--win-score"},
  };
  for (const auto& [args, flag] : cases) {
    const Out r = run("eval " + args + " --games 3");
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << ": does not name " << flag << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
  }
}

}  // namespace
}  // namespace grpo::test
