// The training loop on the host: launch epoch e, then read epoch e-1's metrics while e runs
// (no host round-trip inside an epoch). Best score, patience and the non-finite guard act on
// metrics one epoch late, so a stop takes effect with a lag of one epoch: the run may execute
// one epoch past the one that triggered it (its metrics are still reported).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/executor.h"
#include "engine/train_config.h"

namespace grpo {

struct EpochReport {
  TrainScalars m;       // the epoch's metrics snapshot (m.epoch, m.score, m.loss, ...)
  double seconds;       // wall time of this epoch as seen by the host
  double epochs_per_s;  // over the run so far
  float best_score;
  uint32_t best_epoch;
};

struct TrainResult {
  uint32_t first_epoch = 0, last_epoch = 0;  // inclusive range of epochs run
  uint32_t epochs_run = 0;
  float best_score = 0;
  uint32_t best_epoch = 0;
  bool early_stopped = false;
  bool nonfinite = false;
  bool interrupted = false;
  double seconds = 0;
};

struct TrainHooks {
  std::function<void(const EpochReport&)> on_epoch;  // metrics line, progress
  std::function<void(const EpochReport&)> on_best;   // a new best score
  std::function<bool()> stop_requested;              // e.g. SIGINT
  // Periodic checkpoints. Before launching epoch e (> the first epoch of this call) the loop asks
  // checkpoint_due(e); if true it first drains the pipeline (reads epoch e-1's metrics, which may
  // stop the run) and then calls on_checkpoint(r) while the executor holds exactly the state
  // after e epochs with every earlier epoch's metrics consumed: r.best_score and r.best_epoch are
  // then exact for that state, so a resume from it continues the run bit for bit (a resumed run
  // starts drained, like the uninterrupted one after this point).
  std::function<bool(uint32_t next_epoch)> checkpoint_due;
  std::function<void(const TrainResult& so_far)> on_checkpoint;
  std::function<void(uint32_t epoch)> before_launch;  // right before epoch `epoch` is launched (profiling)
};

// Runs epochs from the executor's current state until total_epochs, early stop, a non-finite
// loss or gradient, or a stop request.
TrainResult train_loop(const TrainConfig& c, Executor& ex, uint32_t start_epoch, float best_score, uint32_t best_epoch,
                       const TrainHooks& hooks);

// One JSON object (no newline) with the epoch's metrics, for --metrics.
std::string metrics_json(const EpochReport& r, const TrainConfig& c);

}  // namespace grpo
