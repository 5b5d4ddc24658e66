// Resume equals an uninterrupted run, for any executor: run N epochs straight (taking a periodic
// checkpoint at k on the way, as `grpo train` does), then run again from that file to N on a
// fresh executor; the slabs (parameters, gradients, moments), the scalars, every later epoch's
// metrics and the best score and epoch must be equal bit for bit. The same through an interrupt
// (stop_requested at k, checkpoint after the loop, as SIGINT does).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include "engine/checkpoint/checkpoint.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {

using MakeExecutor = std::function<std::unique_ptr<Executor>(const TrainConfig&)>;

struct Run {
  RunState state;
  std::vector<TrainScalars> metrics;  // every epoch's metrics, in order
  TrainResult result;
};

inline std::string resume_temp(const char* name) {
  const auto d = std::filesystem::temp_directory_path() / ("grpo_resume_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return (d / name).string();
}

// Runs to c.total_epochs from `from` (a checkpoint path, or initial state when empty); saves a
// checkpoint to `save` at epoch `at` (periodic, drained) or after an interrupt at `at`.
inline Run run_with_checkpoint(const TrainConfig& c, const MakeExecutor& make, const std::string& from,
                               const std::string& save, uint32_t at, bool interrupt) {
  auto ex = make(c);
  Run run;
  float best = -std::numeric_limits<float>::infinity();
  uint32_t best_epoch = 0, start = 0;
  if (from.empty()) {
    ex->set_state(initial_state(c));
  } else {
    const Checkpoint ck = load_checkpoint(from);
    ex->set_state(ck.state);
    best = ck.best_score;
    best_epoch = ck.best_epoch;
    start = ck.state.scalars.epoch;
  }
  TrainHooks hooks;
  hooks.on_epoch = [&](const EpochReport& r) { run.metrics.push_back(r.m); };
  if (!save.empty() && !interrupt) {
    hooks.checkpoint_due = [&](uint32_t e) { return e == at; };
    hooks.on_checkpoint = [&](const TrainResult& r) {
      const RunState s = ex->get_state();
      EXPECT_EQ(s.scalars.epoch, at);
      save_checkpoint(save, c, s, r.best_score, r.best_epoch);
    };
  }
  if (interrupt) hooks.stop_requested = [&] { return run.metrics.size() + 1 >= at; };
  run.result = train_loop(c, *ex, start, best, best_epoch, hooks);
  if (interrupt) {
    EXPECT_TRUE(run.result.interrupted);
    EXPECT_EQ(run.result.last_epoch + 1, at);
    save_checkpoint(save, c, ex->get_state(), run.result.best_score, run.result.best_epoch);
  }
  run.state = ex->get_state();
  return run;
}

inline void expect_resume_equals_uninterrupted(const MakeExecutor& make, int total, uint32_t k, bool interrupt,
                                               TrainConfig c = tiny_config()) {
  c.total_epochs = total;
  c.patience = 0;
  const std::string file = resume_temp("k.safetensors");
  const Run straight = run_with_checkpoint(c, make, "", "", 0, false);
  const Run first = run_with_checkpoint(c, make, "", file, k, interrupt);
  if (!interrupt) {
    EXPECT_TRUE(bitwise_equal(first.state, straight.state)) << "a drained checkpoint changed the run";
  }
  const Run resumed = run_with_checkpoint(c, make, file, "", 0, false);
  EXPECT_TRUE(bitwise_equal(resumed.state, straight.state)) << "resumed run differs from the uninterrupted one";
  ASSERT_EQ(straight.metrics.size(), size_t(total));
  ASSERT_EQ(resumed.metrics.size(), size_t(total) - k);
  for (size_t i = 0; i < resumed.metrics.size(); ++i)
    EXPECT_EQ(0, std::memcmp(&resumed.metrics[i], &straight.metrics[k + i], sizeof(TrainScalars))) << "epoch " << k + i;
  EXPECT_EQ(resumed.result.best_score, straight.result.best_score);
  EXPECT_EQ(resumed.result.best_epoch, straight.result.best_epoch);
  EXPECT_EQ(resumed.result.first_epoch, k);
  EXPECT_EQ(resumed.result.last_epoch, uint32_t(total - 1));
  std::filesystem::remove_all(std::filesystem::path(file).parent_path());
}

}  // namespace grpo::test
