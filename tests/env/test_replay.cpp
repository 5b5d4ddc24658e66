// `grpo replay` on the host backend: round trip against a direct simulation, a hand-checked
// transcript, malformed documents (one-line errors naming the field), and the binary's exit codes.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"
#include "env/replay.h"
#include "tests/env/replay_fixture.h"

namespace grpo {
namespace {
using nlohmann::json;

std::vector<json> replay_lines(const std::string& doc, ReplayBackend backend = replay_host) {
  std::istringstream in(doc);
  std::ostringstream out;
  run_replay(in, out, backend);
  std::vector<json> lines;
  std::istringstream text(out.str());
  for (std::string line; std::getline(text, line);) lines.push_back(json::parse(line));
  return lines;
}

// Compares parsed output with the simulation; floats compared as float32 (the printed reward is
// the shortest decimal that reads back as the same float).
void expect_same(const std::vector<json>& got, const std::vector<json>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t]["t"], t);
    for (const char* key : {"score", "steps", "bottomed"}) ASSERT_EQ(got[t][key], want[t][key]) << key << " t=" << t;
    ASSERT_EQ(got[t]["observations"].size(), want[t]["observations"].size());
    for (size_t g = 0; g < got[t]["observations"].size(); ++g)
      for (size_t k = 0; k < got[t]["observations"][g].size(); ++k)
        ASSERT_EQ(got[t]["observations"][g][k].get<float>(), want[t]["observations"][g][k].get<float>());
    for (size_t g = 0; g < got[t]["reward"].size(); ++g)
      ASSERT_EQ(got[t]["reward"][g].get<float>(), want[t]["reward"][g].get<float>()) << "t=" << t << " g=" << g;
  }
}

TEST(Replay, RoundTripMatchesTheRulesOnRandomDocuments) {
  const GameConfig configs[] = {GameConfig{}, test::config(7, 4, 1, 5, 2, 0), test::config(30, 25, 5, 8, 1, 3)};
  uint32_t seed = 21;
  for (const GameConfig& c : configs) {
    const json doc = test::random_replay_document(c, 37, 60, seed++);
    expect_same(replay_lines(doc.dump()), test::simulate_replay(c, doc));
  }
}

TEST(Replay, HandCheckedTranscript) {
  // Game 0: a fruit at y = 12 above the sprite's reach, a spawn on step 0 (coin 0.7, gate open),
  // caught on step 1 after the sprite moved right. Game 1: the gate (I = 5) stops the coin.
  const std::string doc = R"({"game": {"screen_width":20, "screen_height":15, "sprite_width":3, "max_fruits":3,
      "min_fruits":1, "min_interval_steps":5},
    "observations": [[5, 5, 12, 1, 0, 0, 0, 0, 0, 0], [1, 9, 0, 1, 0, 0, 0, 0, 0, 0]],
    "steps": [{"actions":[1,0], "coins":[0.7,0.2], "spawn_x":[[3,4,5],[6,7,8]]},
              {"actions":[2,0], "coins":[0.7,0.2], "spawn_x":[[3,4,5],[6,7,8]]},
              {"actions":[2,0], "coins":[0.7,0.9], "spawn_x":[[3,4,5],[6,7,8]]}]})";
  std::istringstream in(doc);
  std::ostringstream out;
  run_replay(in, out, replay_host);
  EXPECT_EQ(out.str(),
            "{\"t\": 0, \"observations\": [[5, 5, 13, 1, 3, 0, 1, 0, 0, 0], [0, 9, 1, 1, 0, 0, 0, 0, 0, 0]], "
            "\"score\": [0, 0], \"steps\": [1, 1], \"bottomed\": [0, 0], \"reward\": [0.05, 0.05]}\n"
            "{\"t\": 1, \"observations\": [[6, 5, 14, 0, 3, 1, 1, 0, 0, 0], [0, 9, 2, 1, 0, 0, 0, 0, 0, 0]], "
            "\"score\": [1, 0], \"steps\": [2, 2], \"bottomed\": [1, 0], \"reward\": [1.04, 0.04]}\n"
            "{\"t\": 2, \"observations\": [[7, 5, 14, 0, 3, 2, 1, 0, 0, 0], [0, 9, 3, 1, 0, 0, 0, 0, 0, 0]], "
            "\"score\": [1, 0], \"steps\": [3, 3], \"bottomed\": [1, 0], \"reward\": [0.04, 0.04]}\n");
}

TEST(Replay, DefaultsAndNoSteps) {
  EXPECT_TRUE(replay_lines(R"({"observations": [[1, 2, 3, 1, 0, 0, 0, 0, 0, 0]], "steps": []})").empty());
  const auto lines = replay_lines(
      R"({"game": {"max_fruits": 1}, "observations": [[0, 0, 13, 1.0]],
          "steps": [{"actions": [0], "coins": [0], "spawn_x": [[19]]}]})");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["observations"], json::parse("[[0, 19, 0, 1]]"));  // caught at x = 0, refilled
  EXPECT_EQ(lines[0]["score"], json::parse("[1]"));
}

std::string refusal(const std::string& doc) {
  try {
    replay_lines(doc);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Replay, MalformedDocumentsNameTheField) {
  const std::string obs = R"("observations": [[1, 2, 3, 1, 0, 0, 0, 0, 0, 0], [4, 5, 6, 0, 7, 8, 1, 0, 0, 0]])";
  const std::string step_ok = R"({"actions": [0, 2], "coins": [0.1, 0.9], "spawn_x": [[1, 2, 3], [4, 5, 6]]})";
  auto with_step = [&](const std::string& s) { return "{" + obs + R"(, "steps": [)" + step_ok + ", " + s + "]}"; };
  const struct {
    std::string doc, field;
  } cases[] = {
      {"{" + obs + ", \"steps\": [" + step_ok + "]", "not valid JSON"},
      {"", "not valid JSON"},
      {"[1, 2]", "document: must be an object"},
      {R"({"steps": []})", "observations: is missing"},
      {"{" + obs + "}", "steps: is missing"},
      {"{" + obs + R"(, "steps": [], "extra": 1})", "unknown key \"extra\""},
      {R"({"observations": [], "steps": []})", "observations: must be a non-empty"},
      {R"({"observations": [[1, 2, 3]], "steps": []})", "observations[0]: must have 10 elements"},
      {R"({"observations": [[20, 2, 3, 1, 0, 0, 0, 0, 0, 0]], "steps": []})", "observations[0][0]"},
      {R"({"observations": [[1, -1, 3, 1, 0, 0, 0, 0, 0, 0]], "steps": []})", "observations[0][1]"},
      {R"({"observations": [[1, 2, 3.5, 1, 0, 0, 0, 0, 0, 0]], "steps": []})", "observations[0][2]"},
      {R"({"observations": [[1, 2, 3, 2, 0, 0, 0, 0, 0, 0]], "steps": []})", "observations[0][3]"},
      {R"({"observations": [[1, 2, 3, "1", 0, 0, 0, 0, 0, 0]], "steps": []})", "observations[0][3]"},
      {R"({"observations": [[1, 2, 3, 1, 0, 0, 0, 0, 0, 0], [1, 2]], "steps": []})", "observations[1]"},
      {R"({"game": {"screen_width": 3}, "observations": [[1, 2, 3, 1, 0, 0, 0, 0, 0, 0]], "steps": []})",
       "game.screen_width"},
      {R"({"game": {"max_fruits": 9}, "observations": [[1]], "steps": []})", "game.max_fruits"},
      {R"({"game": {"min_fruits": 4}, "observations": [[1]], "steps": []})", "game.min_fruits"},
      {R"({"game": {"sprite_width": 2.5}, "observations": [[1]], "steps": []})", "game.sprite_width"},
      {R"({"game": {"screen_wdith": 20}, "observations": [[1]], "steps": []})", "unknown key \"screen_wdith\""},
      {with_step(R"({"actions": [0], "coins": [0.1, 0.9], "spawn_x": [[1, 2, 3], [4, 5, 6]]})"),
       "steps[1].actions: must have 2 elements"},
      {with_step(R"({"actions": [0, 3], "coins": [0.1, 0.9], "spawn_x": [[1, 2, 3], [4, 5, 6]]})"),
       "steps[1].actions[1]"},
      {with_step(R"({"actions": [0, 1], "coins": [0.1, 1.0], "spawn_x": [[1, 2, 3], [4, 5, 6]]})"),
       "steps[1].coins[1]"},
      {with_step(R"({"actions": [0, 1], "coins": [-0.1, 0.5], "spawn_x": [[1, 2, 3], [4, 5, 6]]})"),
       "steps[1].coins[0]"},
      {with_step(R"({"actions": [0, 1], "coins": [0.1, 0.5], "spawn_x": [[1, 2, 3], [4, 5]]})"),
       "steps[1].spawn_x[1]: must have 3 elements"},
      {with_step(R"({"actions": [0, 1], "coins": [0.1, 0.5], "spawn_x": [[1, 2, 3], [4, 5, 20]]})"),
       "steps[1].spawn_x[1][2]"},
      {with_step(R"({"actions": [0, 1], "coins": [0.1, 0.5]})"), "steps[1].spawn_x: is missing"},
      {with_step(R"({"actions": [0, 1], "coins": [0.1, 0.5], "spawn_x": [[1, 2, 3], [4, 5, 6]], "x": 0})"),
       "steps[1]: unknown key \"x\""},
      {with_step("7"), "steps[1]: must be an object"},
  };
  for (const auto& k : cases) {
    const std::string msg = refusal(k.doc);
    EXPECT_NE(msg.find(k.field), std::string::npos) << "want '" << k.field << "', got: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_EQ(refusal("{" + obs + ", \"steps\": [" + step_ok + "]}"), "(accepted)");
}

// Hostile documents: deep nesting, numbers beyond double, control characters in keys and
// values, huge values: refused with one line that stays short, never a crash.
TEST(Replay, HostileDocumentsGetOneShortLine) {
  const std::string obs = R"("observations": [[1, 2, 3, 1, 0, 0, 0, 0, 0, 0]])";
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const struct {
    std::string doc, want;
  } cases[] = {
      {deep, "nested deeper than"},
      {"{" + obs + R"(, "steps": [], "game": )" + std::string(5000, '[') + std::string(5000, ']') + "}",
       "nested deeper than"},
      {"{" + obs + R"(, "steps": [{"actions": [)" + std::string(50000, '[') + std::string(50000, ']') +
           R"(], "coins": [0.5], "spawn_x": [[1, 2, 3]]}]})",
       "nested deeper than"},
      {"{" + obs + R"(, "steps": [{"actions": [1e999], "coins": [0.5], "spawn_x": [[1, 2, 3]]}]})", "not valid JSON"},
      {"{" + obs + R"(, "steps": [], "bad\nkey": 1})", "unknown key \"bad\\nkey\""},
      // The parser quotes the token it stopped at: an unterminated string, a number run on.
      {"{" + obs + R"(, "steps": [], "a": ")" + std::string(100000, 'x'), "not valid JSON"},
      {"{" + obs + R"(, "steps": [], "a": 1)" + std::string(100000, '2') + "x}", "not valid JSON"},
      {"{" + obs + R"(, "steps": [{"actions": [")" + std::string(100000, 'x') +
           R"("], "coins": [0.5], "spawn_x": [[1, 2, 3]]}]})",
       "steps[0].actions[0]"},
  };
  for (const auto& k : cases) {
    const std::string msg = refusal(k.doc);
    EXPECT_NE(msg.find(k.want), std::string::npos) << "want '" << k.want << "', got: " << msg.substr(0, 300);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 400u) << msg.substr(0, 300);
  }
}

// The binary: exit code 0 with one line per step, 2 with a one-line error for bad input.
int run_binary(const std::string& args, const std::string& input, std::string& out, std::string& err) {
  const std::string dir = ::testing::TempDir();
  const std::string in_path = dir + "/replay_in.json", out_path = dir + "/replay_out", err_path = dir + "/replay_err";
  std::ofstream(in_path) << input;
  const std::string cmd =
      std::string(GRPO_BINARY_DIR) + "/grpo replay " + args + " < " + in_path + " > " + out_path + " 2> " + err_path;
  const int status = std::system(cmd.c_str());
  std::stringstream o, e;
  o << std::ifstream(out_path).rdbuf();
  e << std::ifstream(err_path).rdbuf();
  out = o.str();
  err = e.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ReplayBinary, ExitCodes) {
  if (!std::ifstream(std::string(GRPO_BINARY_DIR) + "/grpo")) GTEST_SKIP() << "grpo binary not built";
  const json doc = test::random_replay_document(GameConfig{}, 5, 4, 3);
  std::string out, err;
  EXPECT_EQ(run_binary("", doc.dump(), out, err), 0) << err;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4);
  EXPECT_EQ(run_binary("--backend host", R"({"observations": [[1, 2]], "steps": []})", out, err), 2);
  EXPECT_TRUE(out.empty());
  EXPECT_NE(err.find("observations[0]"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run_binary("--input /nonexistent/doc.json", "", out, err), 2);
  EXPECT_NE(err.find("--input"), std::string::npos) << err;
  EXPECT_EQ(run_binary("--input /", "", out, err), 2);
  EXPECT_NE(err.find("--input"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run_binary("--backend gpu", doc.dump(), out, err), 2);
#if defined(GRPO_SIMT)
  // The emulator is the device here: both backends print the same lines.
  std::string host_out;
  ASSERT_EQ(run_binary("--backend host", doc.dump(), host_out, err), 0) << err;
  EXPECT_EQ(run_binary("--backend cuda", doc.dump(), out, err), 0) << err;
  EXPECT_EQ(out, host_out);
#elif !defined(GRPO_HAVE_CUDA)
  EXPECT_EQ(run_binary("--backend cuda", doc.dump(), out, err), 2);
  EXPECT_NE(err.find("--backend cuda"), std::string::npos) << err;
#endif
}

}  // namespace
}  // namespace grpo
