#include "engine/step.h"

#include "engine/metrics_ring.h"
#include "kernels/fc_in.h"

namespace grpo {

StepBuffers StepBuffers::over(float* slabs, void* arena, const TrainConfig& c) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  char* base = static_cast<char*>(arena);
  auto f = [&](size_t off) { return reinterpret_cast<float*>(base + off); };
  StepBuffers b;
  b.params = slabs;
  b.grads = slabs + pl.total;
  b.adam_m = slabs + 2 * pl.total;
  b.adam_v = slabs + 3 * pl.total;
  b.n_params = pl.total;
  b.p = ParamViews::over(b.params, pl);
  b.g = ParamViews::over(b.grads, pl);
  b.obs = f(al.obs);
  b.actions = reinterpret_cast<int32_t*>(base + al.actions);
  b.rewards = f(al.rewards);
  b.returns = f(al.returns);
  b.advantages = f(al.advantages);
  b.adv_stats = f(al.adv_stats);
  b.old_logp = c.algo == Algo::Grpo ? f(al.old_logp) : nullptr;
  b.acts = {f(al.h0), f(al.h1), f(al.a1), f(al.h2), f(al.logits), f(al.ln_mean), f(al.ln_rstd)};
  if (c.precision == Precision::Bf16) {
    auto h = [&](size_t off) { return reinterpret_cast<Bf16*>(base + off); };
    b.acts.h1_bf16 = h(al.h1_bf16);
    b.acts.da1_bf16 = h(al.da1_bf16);
    b.p.fc1_w_bf16 = h(al.fc1_w_bf16);
  }
  b.p.fc_in_w_t = f(al.fc_in_w_t);
  b.trunk_work = f(al.trunk_work);
  b.dlogits = f(al.dlogits);
  b.scratch = f(al.scratch);
  b.games = make_games_view(c.game, c.games(), base + al.games);
  b.scalars = reinterpret_cast<TrainScalars*>(base + al.scalars);
  b.ring = reinterpret_cast<TrainScalars*>(base + al.metrics);
  b.best = f(al.best);
  b.best_scalars = reinterpret_cast<TrainScalars*>(base + al.best_scalars);
  return b;
}

// fc1.weight and fc_in.weight have been set (a state loaded or restored) and are read next: the
// host's packed copy of fc1.weight, its bf16 copy under --precision bf16 (one cast of H*H
// floats), fc_in.weight transposed for the rollout (H*D floats).
void refresh_weight_copies(Ops& ops, const ParamViews& p, int H, int D) {
  ops.weights_unchanged(p.fc1_w, H, H);
  if (p.fc1_w_bf16) ops.cast_bf16(p.fc1_w, p.fc1_w_bf16, size_t(H) * H);
  if (p.fc_in_w_t) ops.fc_in_transpose(p.fc_in_w, p.fc_in_w_t, H, D);
}

namespace {

// Spec steps 5-6 over rows [r0, r0 + rows) of the rollout: the head's loss (a mean over those
// rows) with the dropout mask of counter `pass`, then the backward; every gradient in b.g is
// overwritten.
void loss_and_backward(Ops& ops, const StepBuffers& b, const TrainConfig& c, const PolicyObjective& objective,
                       uint32_t pass, size_t r0, int rows) {
  const uint32_t* epoch = &b.scalars->epoch;
  const int H = c.hidden_size, D = c.obs_dim();
  const PolicyActs acts = b.acts.rows_from(r0, H);
  Ops::HeadLoss head{};
  head.a1 = acts.a1;
  head.b1 = b.p.fc1_b;
  head.w_out = b.p.fc_out_w;
  head.b_out = b.p.fc_out_b;
  head.actions = b.actions + r0;
  head.adv = b.advantages + r0;
  head.M = rows;
  head.H = H;
  head.objective = objective;
  if (objective.old_logp) head.objective.old_logp = objective.old_logp + r0;
  head.drop = DropoutSpec{c.dropout, c.seed, Purpose::DropoutLoss, epoch, pass};
  head.logits = acts.logits;
  head.dlogits = b.dlogits + r0 * kActions;
  head.h2 = acts.h2;
  head.dh2 = b.trunk_work;
  head.da1 = acts.h2;  // h2 is dead once the head's backward has dW_out
  head.da1_bf16 = acts.da1_bf16;
  head.g_b1 = b.g.fc1_b;
  head.g_w_out = b.g.fc_out_w;
  head.g_b_out = b.g.fc_out_b;
  head.loss = &b.scalars->loss;
  head.scratch = b.scratch;
  ops.loss_pass(Ops::LossPass{head, b.p, b.g, acts, b.obs + r0 * D, D, b.trunk_work});
}

// Spec steps 6-7: clip by the global norm, then AdamW, which also writes the working copies
// of what it moves, those refresh_weight_copies makes: fc1.weight's bf16 copy under --precision
// bf16 (the products after an update read it) and fc_in.weight transposed (the next rollout's).
void update(Ops& ops, const StepBuffers& b, const TrainConfig& c) {
  ops.grad_norm(b.grads, b.n_params, b.scalars, c.max_grad_norm, b.scratch);
  AdamWConfig adam;
  adam.weight_decay = c.weight_decay;
  const int H = c.hidden_size, D = c.obs_dim();
  const Bf16Copy fc1_copy{size_t(b.p.fc1_w - b.params), b.p.fc1_w_bf16 ? size_t(H) * H : 0, b.p.fc1_w_bf16};
  const TransposedCopy fc_in_copy{size_t(b.p.fc_in_w - b.params), unsigned(H), unsigned(D), fc_in_t_pitch(H),
                                  b.p.fc_in_w_t};
  ops.adamw(b.params, b.grads, b.adam_m, b.adam_v, b.n_params, b.scalars, adam, WeightCopies(fc1_copy, fc_in_copy));
}

// --algo grpo after the rollout (docs/spec/training.md "Beyond the reference"): keep the rollout
// policy's log-probabilities, group-relative advantages, then --ppo-epochs passes over the same
// rollout, each in --minibatches slices of T / B whole game steps with one update per slice.
// The first slice of the first pass reuses the rollout's trunk activations (the parameters have
// not changed yet, as in the reference path); every later slice recomputes its rows' trunk with
// the updated parameters. The last update's bookkeeping is advance_schedule's, at the end of the
// epoch.
void grpo_update(Ops& ops, const StepBuffers& b, const TrainConfig& c) {
  const int T = c.max_steps, N = c.games(), M = int(c.samples()), H = c.hidden_size, B = c.minibatches;
  const int rows = M / B;  // validate() makes B divide T
  ops.range_push("returns");
  ops.action_log_probs(b.acts.logits, b.actions, M, b.old_logp);
  ops.group_normalize_rewards(b.rewards, b.returns, T, c.game.groups(), c.batch_size, nullptr);
  ops.discounted_returns(b.returns, b.advantages, T, N, c.gamma);
  ops.range_pop();
  const PolicyObjective objective{c.entropy_coef, b.old_logp, c.clip, c.kl_beta};
  const int updates = c.ppo_epochs * B;
  for (int u = 0; u < updates; ++u) {
    const size_t r0 = size_t(u % B) * rows;
    ops.range_push("loss+backward");
    if (u > 0) {
      ops.weights_unchanged(b.p.fc1_w, H, H);  // the last update wrote the bf16 copy too
      policy_trunk_forward(ops, b.p, b.obs + r0 * c.obs_dim(), rows, c.obs_dim(), H, b.acts.rows_from(r0, H));
    }
    loss_and_backward(ops, b, c, objective, uint32_t(u), r0, rows);
    ops.range_pop();
    ops.range_push("optimizer");
    update(ops, b, c);
    if (u + 1 < updates) {
      ops.finish_update(b.scalars);
      ops.range_pop();
    }
  }
}

}  // namespace

void training_step(Ops& ops, const StepBuffers& b, const TrainConfig& c) {
  const int T = c.max_steps, N = c.games(), D = c.obs_dim(), H = c.hidden_size;
  const int M = int(c.samples());
  const uint32_t* epoch = &b.scalars->epoch;  // read by the kernels: never a frozen argument

  // 1-2. Rollout: T strictly sequential steps of policy, sampling and game. fc1.weight is read
  // by T products here and by the loss pass, and written only by AdamW at the end. Its working
  // copies and fc_in.weight's are current: the executor made them when it set the state, and
  // every update since wrote them (update above).
  ops.weights_unchanged(b.p.fc1_w, H, H);
  ops.range_push("rollout");
  ops.rollout(Ops::Rollout{b.p, b.acts, b.obs, b.actions, b.rewards, b.games, c.seed, epoch, c.dropout, T, N, D, H,
                           ops.loss_pass_reads_h0(H, D)});
  ops.range_pop();
  // The epoch's score is known once its games are played: the state that played them is kept
  // when it is a new best, before any update changes it.
  ops.score_epoch(b.games.score, N, b.scalars, b.params, b.n_params, b.best, b.best_scalars, b.scratch);

  // Both paths end inside the "optimizer" range, which the metrics share.
  if (c.algo == Algo::Grpo) {
    grpo_update(ops, b, c);
  } else {
    // 3-4. Discounted returns per game, normalised over all T*N samples.
    ops.range_push("returns");
    ops.discounted_returns(b.rewards, b.returns, T, N, c.gamma);
    ops.normalize_advantages(b.returns, b.advantages, M, b.scratch, b.adv_stats);
    ops.range_pop();

    // 5-6. Loss pass on all samples with a fresh dropout mask, then backward. The spec recomputes
    // the policy on every o_t, but the parameters have not changed since the rollout and the
    // dropout is the only random op: the trunk up to a1 (fc_in, LayerNorm, fc1: three quarters
    // of the forward's FLOPs) would come out as the rollout left it in rows t*N.., so only the
    // head runs again, with the fresh mask. (Same function; the bits of a1 may differ from a
    // recompute by the GEMM's blocking for 136 rows vs M rows, well inside the tolerances.)
    ops.range_push("loss+backward");
    loss_and_backward(ops, b, c, PolicyObjective{c.entropy_coef}, 0, 0, M);
    ops.range_pop();

    // 6-7. Clip by the global norm, AdamW.
    ops.range_push("optimizer");
    update(ops, b, c);
  }
  // 8. Metrics, then the schedule and counters move on.
  ops.end_epoch(b.rewards + size_t(T - 1) * N, N, b.scalars, b.ring, b.scratch);
  ops.range_pop();
}

}  // namespace grpo
