// Tiny training configurations and helpers shared by the engine tests.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "engine/executor.h"
#include "engine/trainer.h"

namespace grpo::test {

// Small enough for the emulator: 3 groups x 2 games, 8 steps, hidden 16 (not a multiple of 32).
// Runs `cmd` through the shell and returns its exit code (-1 unless it exited normally), its
// standard output in `out`.
inline int command_output(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline TrainConfig tiny_config() {
  TrainConfig c;
  c.game.screen_width = 6;
  c.game.screen_height = 6;
  c.game.min_interval_steps = 2;
  c.hidden_size = 20;
  c.batch_size = 2;
  c.max_steps = 8;
  c.total_epochs = 1000;
  c.lr = 3e-3f;
  c.dropout = 0.1f;
  c.seed = 1234;
  c.patience = 0;
  return c;
}

// tiny_config with --algo grpo: several passes of two slices per rollout, the KL term and the
// linear learning-rate decay on, so that every new op and the trunk recompute of later updates run.
inline TrainConfig tiny_grpo_config() {
  TrainConfig c = tiny_config();
  c.algo = Algo::Grpo;
  c.lr_schedule = LrSchedule::Linear;
  c.ppo_epochs = 3;
  c.minibatches = 2;
  c.kl_beta = 0.05f;
  return c;
}

// Runs `epochs` epochs from the initial state on `ex` and returns the final state; every
// epoch's metrics go to *metrics when given.
inline RunState run_epochs(const TrainConfig& c, Executor& ex, int epochs,
                           std::vector<TrainScalars>* metrics = nullptr) {
  ex.set_state(initial_state(c));
  TrainConfig run = c;
  run.total_epochs = epochs;
  TrainHooks hooks;
  hooks.on_epoch = [&](const EpochReport& r) {
    if (metrics) metrics->push_back(r.m);
  };
  train_loop(run, ex, 0, -std::numeric_limits<float>::infinity(), 0, hooks);
  return ex.get_state();
}

inline bool bitwise_equal(const RunState& a, const RunState& b) {
  return a.slabs.size() == b.slabs.size() &&
         std::memcmp(a.slabs.data(), b.slabs.data(), a.slabs.size() * sizeof(float)) == 0 &&
         std::memcmp(&a.scalars, &b.scalars, sizeof a.scalars) == 0;
}

}  // namespace grpo::test
