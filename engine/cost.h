// What one epoch costs, counted rather than timed (docs/design.md "Performance method"; the FLOP
// formula is docs/spec/training.md's). P = D*Hd + Hd*Hd + 3*Hd matrix weights, M = T*N samples.
#pragma once
#include <cstdint>

#include "engine/layout.h"
#include "engine/train_config.h"

namespace grpo {

// --algo grpo makes K = --ppo-epochs passes over the rollout (K = 1 for the reference), each in
// B = --minibatches slices with one update each.
struct EpochCost {
  double flops;           // matrix products by the spec's count: rollout 2MP + K (loss forward 2MP + backward 4MP)
  double flops_executed;  // what this engine runs: the first slice's loss pass reuses the rollout's
                          // trunk, so its forward is the head alone (2 M 3 Hd): about 6MP for the
                          // reference; every later slice recomputes its trunk
  double min_bytes;       // a lower bound on DRAM traffic, see epoch_cost()
  double rollout_steps;   // T: kernels that cannot overlap (the latency floor of the rollout)
};

inline EpochCost epoch_cost(const TrainConfig& c) {
  const double M = double(c.samples()), H = c.hidden_size, D = c.obs_dim();
  const double P = D * H + H * H + kActions * H;
  const ParamLayout l(c.hidden_size, c.obs_dim());
  const bool grpo = c.algo == Algo::Grpo;
  const double K = grpo ? c.ppo_epochs : 1, B = grpo ? c.minibatches : 1;
  const double trunk = 2.0 * (D * H + H * H);  // FLOPs per sample of fc_in and fc1
  EpochCost k;
  k.flops = 2.0 * M * P + K * 6.0 * M * P;
  k.flops_executed = 2.0 * M * P + K * (4.0 * M * P + 2.0 * M * kActions * H) + (K * M - M / B) * trunk;
  // Weights are read once per forward pass (T rollout steps, each loss pass) and by each backward,
  // gradients written once per update, AdamW reads p, g, m, v and writes p, m, v. In each loss
  // pass each of the four [M, Hd] activations (h0, h1, a1, h2) and four gradients (dh2, da1, dh1,
  // dh0) is written once and read once; observations, logits and the rollout record are small.
  const double weights = (double(c.max_steps) + 2.0 * K) * P * 4 + double(l.count) * 4 * (1 + 7) * K * B;
  const double activations = K * 16.0 * M * H * 4;
  const double record = M * (D + 3 + 3 + 4) * 4 * 2;
  k.min_bytes = weights + activations + record;
  k.rollout_steps = c.max_steps;
  return k;
}

}  // namespace grpo
