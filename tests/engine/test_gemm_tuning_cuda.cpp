// The tuning file of cuBLASLt's answers (engine/cuda/gemm_tuning.h, `grpo tune-gemm`, `grpo train
// --gemm-tuning`): the answer it writes per product (the fastest past the margin, else the
// first), every way a file can be refused (one line naming it, nothing allocated), and runs that
// take a file's answers: the same bits twice, graph as eager, and on the emulator (whose
// algorithms sum in different orders) other bits than the heuristic's first answers give.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "engine/cuda/gemm_tuning.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system's temporary one, removed with its contents at the end.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("grpo_gemm_tuning_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

const GemmDevice kDevice{"Test GPU", 130001};
constexpr float kNone = std::numeric_limits<float>::quiet_NaN();

GemmShape shape(int m, int n, int k, bool bf16) { return {0, 1, m, n, k, m, n, m, 16, 16, 16, bf16 ? 1 : 0}; }

TEST(GemmTuning, TakesTheFastestAnswerPastTheMarginAndReadsItBack) {
  Scratch s;
  const std::vector<Blas::RankTimes> times = {
      {shape(64, 32, 16, false), {100.f, 120.f, 89.f, 95.f}, {2, 3}, {95.f, 91.f}},  // rank 2, 11% faster
      {shape(64, 48, 16, true), {100.f, 98.f, 99.f}},       // 2% faster: under the 3% margin, rank 0
      {shape(8, 32, 16, false), {50.f, kNone, kNone}},      // one answer only
      {shape(8, 48, 16, true), {kNone, 10.f}, {2}, {5.f}},  // rank 0 not timed: keep it
      {shape(544, 64, 64, true), {13.f, 13.1f}, {2, 3, 4}, {9.f, 7.f, kNone}},  // rank 0 in 3 splits
  };
  const std::string text = gemm_tuning_json(kDevice, Precision::Bf16, times, 0.03);
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["device"], "Test GPU");
  EXPECT_EQ(j["grpo_gemm_tuning"], 2);
  EXPECT_TRUE(j["products"][2]["us"][1].is_null()) << "an answer the heuristic lacks is no time";
  EXPECT_TRUE(j["products"][4]["split_us"][2].is_null()) << "a split the answer does not take is no time";
  EXPECT_EQ(j["products"][4]["splits"], nlohmann::json::array({2, 3, 4}));
  const std::map<GemmShape, GemmAnswer> want = {{times[0].shape, {2, 0}},
                                                {times[1].shape, {0, 0}},
                                                {times[2].shape, {0, 0}},
                                                {times[3].shape, {0, 0}},
                                                {times[4].shape, {0, 3}}};
  EXPECT_EQ(read_gemm_tuning(s.write("t.json", text), kDevice, Precision::Bf16), want);
  // With no margin the 2% answer wins.
  EXPECT_EQ(read_gemm_tuning(s.write("t0.json", gemm_tuning_json(kDevice, Precision::Bf16, times, 0.0)), kDevice,
                             Precision::Bf16)
                .at(times[1].shape),
            (GemmAnswer{1, 0}));
  // A file from before splits (format 1, no "split") still reads: rank only.
  nlohmann::json old = j;
  old["grpo_gemm_tuning"] = 1;
  for (auto& p : old["products"]) p.erase("split"), p.erase("splits"), p.erase("split_us");
  EXPECT_EQ(read_gemm_tuning(s.write("v1.json", old.dump()), kDevice, Precision::Bf16).at(times[0].shape),
            (GemmAnswer{2, 0}));
}

TEST(GemmTuning, RefusesWhatIsNotATuningFileForThisDevice) {
  Scratch s;
  nlohmann::json good =
      nlohmann::json::parse(gemm_tuning_json(kDevice, Precision::Fp32, {{shape(64, 32, 16, false), {2.f, 1.f}}}, 0.03));
  const auto with = [&good](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return j.dump();
  };
  const auto product = [&good](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j["products"][0][key] = std::move(v);
    return j.dump();
  };
  nlohmann::json twice = good;
  twice["products"].push_back(twice["products"][0]);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not JSON", "{\"grpo_gemm_tuning\": 1,"},
      {"not a tuning file", "[1, 2, 3]"},
      {"not a tuning file", "{\"products\": []}"},
      {"format", with("grpo_gemm_tuning", 3)},
      {"format", with("grpo_gemm_tuning", 0)},
      {"timed on \"Other GPU\"", with("device", "Other GPU")},
      {"with cuBLASLt 120000", with("cublaslt_version", 120000)},
      {"\"device\" is", with("device", 7)},
      {"tuned for --precision \"tf32\", and this run is --precision fp32", with("precision", "tf32")},
      {"tuned for --precision", with("precision", nullptr)},
      {"\"products\" is not a list", with("products", "all")},
      {"\"rank\" is", product("rank", 64)},
      {"\"rank\" is", product("rank", -1)},
      {"\"rank\" is", product("rank", 1.5)},
      {"\"split\" is", product("split", 65)},
      {"\"split\" is", product("split", -2)},
      {"\"split\" is", product("split", "3")},
      {"not 12 integers", product("shape", nlohmann::json::array({1, 2, 3}))},
      {"field m is", product("shape", nlohmann::json::array({0, 1, -5, 1, 1, 1, 1, 1, 16, 16, 16, 0}))},
      {"repeats an earlier", twice.dump()},
      {"nested deeper", "{\"a\": [[[[[[1]]]]]]}"},
      {"larger than a tuning file", std::string(size_t(2) << 20, ' ')},
  };
  for (const auto& [why, text] : bad) {
    const std::string path = s.write("bad.json", text);
    try {
      read_gemm_tuning(path, kDevice, Precision::Fp32);
      ADD_FAILURE() << "accepted a file that should fail with \"" << why << "\"";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("--gemm-tuning " + path + ": "), std::string::npos) << m;
      EXPECT_NE(m.find(why), std::string::npos) << "wanted \"" << why << "\" in: " << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  EXPECT_THROW(read_gemm_tuning((s.dir / "absent.json").string(), kDevice, Precision::Fp32), UsageError);
  EXPECT_NO_THROW(read_gemm_tuning(s.write("good.json", good.dump()), kDevice, Precision::Fp32));
}

// tune_gemm on this device (the emulator in CI), then a file that takes answer 1 wherever the
// heuristic has one: two runs with it agree bit for bit, its graph replays its eager epochs, and
// on the emulator the run is not the untuned one (its answer-1 algorithms sum in other orders).
TEST(GemmTuning, RunsTakeTheFilesAnswersReproducibly) {
  GRPO_REQUIRE_DEVICE();
  Scratch s;
  TrainConfig c = tiny_config();  // hidden 20: the rollout's product too goes to cuBLASLt
  const nlohmann::json tuned = nlohmann::json::parse(tune_gemm(c, 2, {2}, 1, 0.03));
  ASSERT_GE(tuned["products"].size(), 3u) << "the rollout's product and the loss pass's";
  const GemmDevice here = this_gemm_device();
  EXPECT_EQ(tuned["device"], here.name);
  nlohmann::json forced = tuned;
  size_t second = 0;
  for (auto& p : forced["products"]) {
    ASSERT_EQ(p["us"].size(), 2u);
    EXPECT_TRUE(p["us"][0].is_number()) << p.dump();
    ASSERT_EQ(p["splits"], nlohmann::json::array({2}));
    p["split"] = 0;
    if (p["us"][1].is_number()) p["rank"] = 1, ++second;
  }
#if defined(GRPO_SIMT)
  EXPECT_EQ(second, forced["products"].size()) << "the emulator's heuristic answers four ways";
#endif
  c.gemm_tuning = s.write("forced.json", forced.dump());
  c.use_graph = false;
  const RunState eager = run_epochs(c, *make_cuda_executor(c), 2);
  EXPECT_TRUE(bitwise_equal(eager, run_epochs(c, *make_cuda_executor(c), 2))) << "not reproducible";
  c.use_graph = true;
  EXPECT_TRUE(bitwise_equal(eager, run_epochs(c, *make_cuda_executor(c), 2))) << "the graph is not the eager run";
  c.gemm_tuning.clear();
  c.use_graph = false;
  const RunState untuned = run_epochs(c, *make_cuda_executor(c), 2);
#if defined(GRPO_SIMT)
  EXPECT_FALSE(bitwise_equal(eager, untuned)) << "the file's answers were not taken";
#else
  (void)untuned;  // on a GPU answers 0 and 1 may be one algorithm
#endif
  // Another device's file is refused before the executor allocates anything.
  nlohmann::json other = tuned;
  other["device"] = "Not " + here.name;
  c.gemm_tuning = s.write("other.json", other.dump());
  EXPECT_THROW(make_cuda_executor(c), UsageError);
}

// The commands: tune-gemm writes the file train reads; train refuses a missing file, or one on
// the host executor, with one line and exit code 2, before it creates its folder.
TEST(GemmTuning, TuneGemmWritesWhatTrainTakes) {
  GRPO_REQUIRE_DEVICE();
  Scratch s;
  const std::string grpo = std::string(GRPO_BINARY_DIR) + "/grpo";
  const std::string small =
      " --backend cuda --hidden-size 20 --batch-size 1 --max-steps 4 --screen-width 6 "
      "--screen-height 6 --min-interval-steps 2";
  const std::string file = (s.dir / "tuning.json").string();
  std::string out;
  ASSERT_EQ(command_output(grpo + " tune-gemm" + small + " --ranks 2 --repeats 1 --write " + file + " 2>&1", out), 0)
      << out;
  EXPECT_NE(out.find("wrote"), std::string::npos) << out;
  EXPECT_NO_THROW(read_gemm_tuning(file, this_gemm_device(), Precision::Fp32));
  const fs::path run = s.dir / "run";
  EXPECT_EQ(command_output(grpo + " train" + small + " --total-epochs 2 --gemm-tuning " + file + " --out " +
                               run.string() + " 2>&1",
                           out),
            0)
      << out;
  EXPECT_TRUE(fs::exists(run / "metrics.jsonl")) << out;
  for (const std::string& flags :
       {small + " --gemm-tuning " + (s.dir / "absent.json").string(), std::string(" --backend host --hidden-size 20 "
                                                                                  "--gemm-tuning ") +
                                                                          file}) {
    const fs::path refused = s.dir / "refused";
    EXPECT_EQ(command_output(grpo + " train" + flags + " --total-epochs 1 --out " + refused.string() + " 2>&1", out), 2)
        << out;
    EXPECT_NE(out.find("--gemm-tuning"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_FALSE(fs::exists(refused)) << "a refused run created its folder";
  }
  EXPECT_EQ(command_output(grpo + " tune-gemm" + small + " --write " + s.dir.string() + " 2>&1", out), 2) << out;
  EXPECT_EQ(command_output(grpo + " tune-gemm" + small + " --write " + file + " --out " + run.string() + " 2>&1", out),
            2)
      << out;
  EXPECT_NE(out.find("--out applies to grpo train"), std::string::npos) << out;
  // A file tuned in fp32 is not a tf32 run's: TF32 products get other answers.
  EXPECT_EQ(command_output(grpo + " train" + small + " --precision tf32 --total-epochs 1 --gemm-tuning " + file +
                               " --out " + (s.dir / "tf32").string() + " 2>&1",
                           out),
            2)
      << out;
  EXPECT_NE(out.find("tuned for --precision"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(s.dir / "tf32"));
}

}  // namespace
}  // namespace grpo::test
