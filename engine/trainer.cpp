#include "engine/trainer.h"

#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

namespace grpo {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

TrainResult train_loop(const TrainConfig& c, Executor& ex, uint32_t start_epoch, float best_score, uint32_t best_epoch,
                       const TrainHooks& hooks) {
  TrainResult r;
  r.first_epoch = start_epoch;
  r.best_score = best_score;
  r.best_epoch = best_epoch;
  const uint32_t end = uint32_t(c.total_epochs);
  if (start_epoch >= end) return r;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point last = t0;
  bool stop = false;

  // Reads epoch e's metrics (blocking until it finished) and decides whether to go on.
  auto consume = [&](uint32_t e) {
    EpochReport rep;
    rep.m = ex.wait_metrics(e);
    const Clock::time_point now = Clock::now();
    rep.seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    r.last_epoch = e;
    r.epochs_run = e - start_epoch + 1;
    rep.epochs_per_s = r.epochs_run / std::max(since(t0), 1e-9);
    // The score is the rollout's, played by finite parameters before the epoch's updates, so it
    // counts even when those updates turn out non-finite (the executor's best-state snapshot
    // takes it too, kernels/best_snapshot.h).
    if (rep.m.score > r.best_score) {
      r.best_score = rep.m.score;
      r.best_epoch = e;
      if (hooks.on_best) hooks.on_best(rep);
    }
    if (rep.m.nonfinite != 0 || !std::isfinite(rep.m.loss)) {
      r.nonfinite = true;
      stop = true;
    }
    rep.best_score = r.best_score;
    rep.best_epoch = r.best_epoch;
    if (hooks.on_epoch) hooks.on_epoch(rep);
    if (c.patience > 0 && e >= r.best_epoch + uint32_t(c.patience)) {
      r.early_stopped = true;
      stop = true;
    }
  };

  uint32_t e = start_epoch;
  bool pending = false;  // epoch e-1 was launched and its metrics not read yet
  for (; e < end && !stop; ++e) {
    if (e > start_epoch && hooks.on_checkpoint && hooks.checkpoint_due && hooks.checkpoint_due(e)) {
      if (pending) consume(e - 1);
      pending = false;
      if (stop) break;
      hooks.on_checkpoint(r);
    }
    if (hooks.before_launch) hooks.before_launch(e);
    ex.launch_epoch();
    if (pending) consume(e - 1);
    pending = true;
    if (hooks.stop_requested && hooks.stop_requested()) {
      r.interrupted = true;
      stop = true;
    }
  }
  if (pending) consume(e - 1);  // the last launched epoch
  r.seconds = since(t0);
  return r;
}

std::string metrics_json(const EpochReport& r, const TrainConfig& c) {
  const double steps_per_epoch = double(c.games()) * c.max_steps;
  nlohmann::ordered_json j = {{"epoch", r.m.epoch},
                              {"score", r.m.score},
                              {"reward", r.m.reward},
                              {"loss", r.m.loss},
                              {"lr", r.m.lr},
                              {"grad_norm", r.m.grad_norm},
                              {"clip_scale", r.m.clip_scale},
                              {"nonfinite", r.m.nonfinite != 0},
                              {"skipped_updates", r.m.skipped_updates},
                              {"best_score", r.best_score},
                              {"epoch_seconds", r.seconds},
                              {"epochs_per_s", r.epochs_per_s},
                              {"game_steps_per_s", steps_per_epoch * r.epochs_per_s}};
  // JSON has no NaN or Infinity: a non-finite value is written as null.
  for (auto& [k, v] : j.items())
    if (v.is_number_float() && !std::isfinite(v.get<double>())) v = nullptr;
  return j.dump();
}

}  // namespace grpo
