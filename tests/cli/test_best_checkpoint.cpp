// best.safetensors end to end: a run writes the state that played its best epoch (kept by the
// executor, written with the checkpoints), and a resume from it replays that epoch: the same
// score, loss and gradient norm as in the run's own metrics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "tests/cli/grpo_run.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> metrics_of(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(BestCheckpoint, HoldsTheBestEpochsStateAndReplaysIt) {
  if (!fs::exists(kGrpo)) GTEST_SKIP() << "grpo binary not built";
  const fs::path d = fs::temp_directory_path() / ("grpo_best_ckpt_" + std::to_string(::getpid()));
  fs::remove_all(d);
  const Out r =
      run("train " + kTiny + " --total-epochs 12 --save-checkpoint-per-num-epoch 4 --out " + (d / "run").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto m = metrics_of(d / "run" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 12u);
  size_t best = 0;
  for (size_t e = 1; e < m.size(); ++e)
    if (m[e]["score"].get<double>() > m[best]["score"].get<double>()) best = e;
  const Checkpoint ck = load_checkpoint((d / "run" / "best.safetensors").string());
  EXPECT_TRUE(ck.has_optimizer);
  EXPECT_EQ(ck.best_epoch, best);
  EXPECT_EQ(ck.state.scalars.epoch, best) << "the state before the best epoch, not after it";
  EXPECT_EQ(double(ck.best_score), m[best]["score"].get<double>());

  const Out again = run("train --backend host --resume " + (d / "run" / "best.safetensors").string() +
                        " --total-epochs " + std::to_string(best + 1) + " --out " + (d / "replay").string());
  ASSERT_EQ(again.code, 0) << again.err;
  const auto replay = metrics_of(d / "replay" / "metrics.jsonl");
  ASSERT_FALSE(replay.empty());
  const nlohmann::json& last = replay.back();
  EXPECT_EQ(last["epoch"], best);
  for (const char* k : {"score", "reward", "loss", "grad_norm", "lr"}) EXPECT_EQ(last[k], m[best][k]) << k;
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::test
