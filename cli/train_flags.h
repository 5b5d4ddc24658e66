// The `grpo train` flags: the reference's names and defaults (docs/spec/training.md "Defaults"), the
// game's flags (docs/spec/fruit_catcher.md) and the engine's own. CLI11 checks each value's range
// and names the flag in its error.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "engine/train_config.h"

namespace grpo {

struct TrainFlags {
  TrainConfig cfg;
  std::string preset = "reference";
  bool no_graph = false;
  bool rollout_loop = false;
  bool no_cluster_rollout = false;  // --no-cluster-rollout: the steps, whatever the precision
  std::string backend = "auto";
  std::string algo = "reference";
  std::string lr_schedule;  // empty: the algorithm's default
};

void add_train_flags(CLI::App& app, TrainFlags& f);
// Applies the preset, then the flags the user gave explicitly, and validates (UsageError).
TrainConfig resolve_train_flags(CLI::App& app, const TrainFlags& f);
// Whether a flag of kRolloutWayFlags chose the rollout's way (else a fresh run takes
// TrainConfig::apply_rollout_default, a resumed one its checkpoint's way).
bool rollout_way_given(const CLI::App& app);

}  // namespace grpo
