#include "engine/train_config.h"

#include <cmath>
#include <string>

#include "core/errors.h"
#include "kernels/few_rows.h"

namespace grpo {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}
}  // namespace

void TrainConfig::apply_rollout_default() {
  if (precision == Precision::Bf16 && linear_forward_takes_few_rows(games(), hidden_size, hidden_size, false))
    rollout_cluster_mma = true;
}

void TrainConfig::validate() const {
  game.validate();
  auto range = [](int lo, int hi) { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; };
  require(hidden_size >= kMinHidden && hidden_size <= kMaxHidden,
          "--hidden-size must be in " + range(kMinHidden, kMaxHidden));
  require(batch_size >= 1 && batch_size <= kMaxBatch, "--batch-size must be in " + range(1, kMaxBatch));
  require(total_epochs >= 1 && total_epochs <= kMaxEpochs, "--total-epochs must be in " + range(1, kMaxEpochs));
  require(max_steps >= 1 && max_steps <= kMaxSteps, "--max-steps must be in " + range(1, kMaxSteps));
  require(std::isfinite(lr) && lr > 0.f && lr <= 1.f, "--lr-rate must be in (0, 1]");
  require(std::isfinite(dropout) && dropout >= 0.f && dropout < 1.f, "--dropout must be in [0, 1)");
  require(std::isfinite(gamma) && gamma >= 0.f && gamma <= 1.f, "--gamma must be in [0, 1]");
  require(std::isfinite(entropy_coef) && entropy_coef >= 0.f && entropy_coef <= 10.f,
          "--entropy-coef must be in [0, 10]");
  // No flags set these two; a checkpoint's config does.
  require(std::isfinite(max_grad_norm) && max_grad_norm > 0.f && max_grad_norm <= 1e6f,
          "max_grad_norm must be in (0, 1e6]");
  require(std::isfinite(weight_decay) && weight_decay >= 0.f && weight_decay < 1.f, "weight_decay must be in [0, 1)");
  require(ppo_epochs >= 1 && ppo_epochs <= 64, "--ppo-epochs must be in [1, 64]");
  require(minibatches >= 1 && minibatches <= 64 && max_steps % minibatches == 0,
          "--minibatches must be in [1, 64] and divide --max-steps (got " + std::to_string(minibatches) + " for " +
              std::to_string(max_steps) + " steps)");
  require(std::isfinite(clip) && clip > 0.f && clip < 1.f, "--clip must be in (0, 1)");
  require(std::isfinite(kl_beta) && kl_beta >= 0.f && kl_beta <= 100.f, "--kl-beta must be in [0, 100]");
  require(algo != Algo::Grpo || int64_t{max_steps} * batch_size >= 2,
          "--algo grpo needs --max-steps x --batch-size >= 2 (each group's rewards need a standard deviation)");
  require(!rollout_cluster_mma || precision == Precision::Bf16,
          "--cluster-rollout-mma needs --precision bf16 (the tensor cores multiply bf16 operands)");
  require(rollout_streams >= 1 && rollout_streams <= kMaxRolloutStreams,
          "--rollout-streams must be in " + range(1, kMaxRolloutStreams));
  require(patience >= 0, "--patience must be >= 0 (0 disables early stopping)");
  require(checkpoint_every == -1 || checkpoint_every >= 1,
          "--save-checkpoint-per-num-epoch must be -1 (only at the end) or >= 1");
  require(profile_first == -1 || (profile_first >= 0 && profile_first <= profile_last),
          "--profile-epochs must be A:B with 0 <= A <= B");
  // Games are counted in int everywhere: check their number in 64 bits before games() is used.
  require(int64_t{game.groups()} * batch_size <= kMaxGames,
          "--batch-size x (screen width - 3) games must be at most 16777216 (got " +
              std::to_string(int64_t{game.groups()} * batch_size) + ")");
  // Kernels index activations with 32-bit integers: keep every [M, width] tensor below 2^31.
  const int64_t widest = std::max<int64_t>(hidden_size, obs_dim());
  require(
      samples() * widest < (int64_t{1} << 31),
      "--max-steps x games x --hidden-size must stay below 2^31 elements (games = (screen width - 3) x --batch-size)");
}

void TrainConfig::apply_small_preset() {
  hidden_size = 512;
  batch_size = 8;
  total_epochs = 200;
  max_steps = 200;
  lr = 5e-4f;
  patience = 300;
  checkpoint_every = 50;
}

void TrainConfig::apply_grpo_defaults() {
  dropout = 0.f;
  gamma = 0.9f;
  lr_schedule = LrSchedule::Linear;
  ppo_epochs = 4;
  minibatches = 4;
  while (minibatches > 1 && max_steps % minibatches != 0) --minibatches;
}

const char* algo_name(Algo a) { return a == Algo::Grpo ? "grpo" : "reference"; }

const char* lr_schedule_name(LrSchedule s) { return s == LrSchedule::Linear ? "linear" : "step"; }

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto:
      return "auto";
    case Backend::Cuda:
      return "cuda";
    case Backend::Host:
      return "host";
  }
  return "?";
}

}  // namespace grpo
