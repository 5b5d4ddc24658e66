// grpo play and grpo eval on a tiny trained checkpoint: the binary's output against the library's
// own games, determinism per seed, greedy vs sampled, and refusal of a bad checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/play/policy_player.h"
#include "tests/cli/grpo_run.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

class PlayEval : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("grpo_pe_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const TrainConfig c = tiny_config();
    auto ex = make_host_executor(c);
    const RunState s = run_epochs(c, *ex, 5);
    ckpt_ = (dir_ / "tiny.safetensors").string();
    save_checkpoint(ckpt_, c, s, 0.5f, 3);
    // The same policy on the largest screen a configuration may have (the parameters do not
    // depend on the screen's size).
    TrainConfig huge = c;
    huge.game.screen_width = huge.game.screen_height = kMaxScreenSide;
    huge_ckpt_ = (dir_ / "huge.safetensors").string();
    save_checkpoint(huge_ckpt_, huge, s, 0.5f, 3);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (!fs::exists(kGrpo)) GTEST_SKIP() << "grpo binary not built";
  }
  static fs::path dir_;
  static std::string ckpt_, huge_ckpt_;
};
fs::path PlayEval::dir_;
std::string PlayEval::ckpt_;
std::string PlayEval::huge_ckpt_;

TEST_F(PlayEval, EvalJsonMatchesTheLibraryAndIsDeterministic) {
  const std::string args =
      "eval --checkpoint " + ckpt_ + " --games 37 --max-steps 60 --seed 5 --win-score 3 --fail-score -2 --json";
  const Out a = run(args);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(run(args).out, a.out) << "same seed, same evaluation";
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["games"], 37);
  EXPECT_EQ(j["policy"], "sampled");
  const double win = j["win_rate"], loss = j["loss_rate"], cap = j["capped_rate"];
  EXPECT_NEAR(win + loss + cap, 1.0, 1e-12);
  EXPECT_GT(j["bottomed"].get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(j["catch_rate"].get<double>(), double(j["caught"].get<int64_t>()) / j["bottomed"].get<int64_t>());

  // The same games played through the library.
  Checkpoint ck = load_checkpoint(ckpt_);
  ck.config.game.win_score = 3;
  ck.config.game.fail_score = -2;
  HostPolicy policy(ck, 37);
  PlayOptions o;
  o.games = 37;
  o.max_steps = 60;
  o.seed = 5;
  const std::vector<GameOutcome> games = play_games(ck.config.game, policy, o);
  const EvalSummary s = summarize(games);
  EXPECT_DOUBLE_EQ(j["mean_score"].get<double>(), s.mean_score);
  EXPECT_DOUBLE_EQ(win, s.win_rate);
  EXPECT_DOUBLE_EQ(loss, s.loss_rate);
  for (const GameOutcome& g : games) {
    if (g.end == GameEnd::Won) {
      EXPECT_GE(g.final.score, 3);
    }
    if (g.end == GameEnd::Lost) {
      EXPECT_LE(g.final.score, -2);
    }
    if (g.end == GameEnd::Capped) {
      EXPECT_EQ(g.final.steps, 60);
    }
    EXPECT_LE(g.final.steps, 60);
  }
  // A few wins or losses happen with these thresholds, else the test would prove little.
  EXPECT_LT(cap, 1.0);
}

TEST_F(PlayEval, GreedyDiffersFromSampledAndTextReportsEveryRate) {
  const Out g = run("eval --checkpoint " + ckpt_ + " --games 20 --max-steps 40 --greedy --json");
  const Out s = run("eval --checkpoint " + ckpt_ + " --games 20 --max-steps 40 --sampled --json");
  ASSERT_EQ(g.code, 0) << g.err;
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["policy"], "greedy");
  EXPECT_NE(g.out, s.out);
  const Out t = run("eval --checkpoint " + ckpt_ + " --games 5 --max-steps 10");
  ASSERT_EQ(t.code, 0) << t.err;
  for (const char* k : {"catch rate", "mean score", "win rate", "loss rate"})
    EXPECT_NE(t.out.find(k), std::string::npos) << k;
  EXPECT_EQ(run("eval --checkpoint " + ckpt_ + " --greedy --sampled").code, 2);
}

TEST_F(PlayEval, PlayDrawsAFramePerStepAndASummary) {
  const Out r = run("play --checkpoint " + ckpt_ + " --fps 0 --max-steps 25 --seed 3 --win-score 2 --fail-score -2");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("(won|lost|step cap reached) after (\\d+) steps: score (-?\\d+)")))
      << r.out;
  const int steps = std::stoi(m[2]);
  EXPECT_GE(steps, 1);
  EXPECT_LE(steps, 25);
  // A status line per frame: the start and one per step; the sprite on every frame's last row.
  size_t frames = 0;
  for (size_t at = r.out.find("step "); at != std::string::npos; at = r.out.find("\nstep ", at + 1)) ++frames;
  EXPECT_EQ(frames, size_t(steps) + 1);
  EXPECT_NE(r.out.find("==="), std::string::npos);
  const int score = std::stoi(m[3]);
  if (m[1] == "won") {
    EXPECT_GE(score, 2);
  }
  if (m[1] == "lost") {
    EXPECT_LE(score, -2);
  }
  if (m[1] == "step cap reached") {
    EXPECT_EQ(steps, 25);
  }
}

TEST_F(PlayEval, BadCheckpointIsOneLineAndExitTwo) {
  const std::string bad = (dir_ / "bad.safetensors").string();
  std::ofstream(bad) << "12345678garbage";
  for (const std::string cmd : {"eval --games 3 --checkpoint ", "play --fps 0 --checkpoint "}) {
    const Out r = run(cmd + bad);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
}

// play and eval take the same checked values as train: plain decimal integers and finite plain
// decimal numbers (these ran, or ended with exit code 1 on the way, before).
TEST_F(PlayEval, BadFlagValuesAreOneLineAndExitTwo) {
  for (const std::string bad :
       {"--max-steps 0x10", "--max-steps ' 5'", "--max-steps 010", "--seed -1", "--dropout nan", "--win-score 0x10",
        "--fail-score ' -3'", "--fps nan", "--games 010", "--games ' 3'", "--checkpoint ''"}) {
    const std::string flag = bad.substr(0, bad.find(' '));
    for (const std::string cmd : {"eval", "play"}) {
      if ((flag == "--games" && cmd == "play") || (flag == "--fps" && cmd == "eval")) continue;
      // Valid values for the other flags, each flag given once.
      std::string args = cmd + " " + bad;
      for (const std::string& ok : {std::string("--max-steps 3"), "--checkpoint " + ckpt_,
                                    std::string(cmd == "eval" ? "--games 2" : "--fps 0")})
        if (ok.rfind(flag + " ", 0) != 0) args += " " + ok;
      const Out r = run(args);
      EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
      EXPECT_NE(r.err.find(flag), std::string::npos) << args << "\n" << r.err;
    }
  }
}

// play draws every cell of every frame: a screen too large for a terminal is refused up front
// (one line, exit 2) instead of allocating width x height characters per frame.
TEST_F(PlayEval, PlayRefusesAScreenTooLargeToDraw) {
  const Out r = run("play --fps 0 --max-steps 2 --checkpoint " + huge_ckpt_);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("too large to draw"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 200);
}

}  // namespace
}  // namespace grpo::test
