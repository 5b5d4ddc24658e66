// What `grpo train --resume CKPT` runs: the checkpoint's configuration, with the run's own
// settings (epochs, patience, cadence, output, executor) taken from flags given explicitly.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/checkpoint/checkpoint.h"

namespace grpo {

// `flags` is the configuration resolved from the command line, `given(name)` whether the user
// gave flag `name` explicitly. The network, the game and the algorithm (hidden size, batch,
// steps, lr, dropout, seed, game shape) come from the checkpoint: such a flag given with another
// value is a mismatch and throws UsageError naming the flag and both values. --total-epochs,
// --patience, --save-checkpoint-per-num-epoch, --precision (or --tf32), --out and --metrics come
// from the flags when given, else from the checkpoint (--out: `default_out`). --backend,
// --no-graph, --no-rollout-loop, --cluster-rollout and --cluster-rollout-mma, which choose how the same
// algorithm runs, come from the flags (their defaults when not given); of these only the last
// changes results, in the last bits of the rollout's fc1 sums on a GPU.
// The result is validated.
TrainConfig resume_config(const std::string& ckpt_path, const Checkpoint& ck, const TrainConfig& flags,
                          const std::function<bool(const char*)>& given, const std::string& default_out);

// Rewrites a metrics file (JSON lines with an "epoch" field) keeping only the epochs before
// `first_epoch`, atomically; a missing file is left missing. Lines that do not parse are dropped.
void trim_metrics(const std::string& path, uint32_t first_epoch);

}  // namespace grpo
