#include "engine/step.h"

#include "engine/metrics_ring.h"

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
  b.acts = {f(al.h0), f(al.h1), f(al.a1), f(al.h2), f(al.logits), f(al.ln_mean), f(al.ln_rstd)};
  b.trunk_work = f(al.trunk_work);
  b.dlogits = f(al.dlogits);
  b.scratch = f(al.scratch);
  b.games = make_games_view(c.game, c.games(), base + al.games);
  b.scalars = reinterpret_cast<TrainScalars*>(base + al.scalars);
  b.ring = reinterpret_cast<TrainScalars*>(base + al.metrics);
  return b;
}

void training_step(Ops& ops, const StepBuffers& b, const TrainConfig& c) {
  const int T = c.max_steps, N = c.games(), D = c.obs_dim(), H = c.hidden_size;
  const int M = int(c.samples());
  const uint32_t* epoch = &b.scalars->epoch;  // read by the kernels: never a frozen argument

  // 1-2. Rollout: T strictly sequential steps of policy, sampling and game. fc1.weight is read
  // by T products here and by the loss pass, and written only by AdamW at the end.
  ops.weights_unchanged(b.p.fc1_w, H, H);
  ops.range_push("rollout");
  ops.rollout(Ops::Rollout{b.p, b.acts, b.obs, b.actions, b.rewards, b.games, c.seed, epoch, c.dropout, T, N, D, H});
  ops.range_pop();

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
  const DropoutSpec drop{c.dropout, c.seed, Purpose::DropoutLoss, epoch, 0};
  Ops::HeadLoss head{};
  head.a1 = b.acts.a1;
  head.b1 = b.p.fc1_b;
  head.w_out = b.p.fc_out_w;
  head.b_out = b.p.fc_out_b;
  head.actions = b.actions;
  head.adv = b.advantages;
  head.M = M;
  head.H = H;
  head.entropy_coef = c.entropy_coef;
  head.drop = drop;
  head.logits = b.acts.logits;
  head.dlogits = b.dlogits;
  head.h2 = b.acts.h2;
  head.dh2 = b.trunk_work;
  head.da1 = b.acts.h2;  // h2 is dead once the head's backward has dW_out
  head.g_b1 = b.g.fc1_b;
  head.g_w_out = b.g.fc_out_w;
  head.g_b_out = b.g.fc_out_b;
  head.loss = &b.scalars->loss;
  head.scratch = b.scratch;
  ops.loss_pass(Ops::LossPass{head, b.p, b.g, b.acts, b.obs, D, b.trunk_work});
  ops.range_pop();

  // 6-8. Clip by the global norm, AdamW, metrics, then the schedule and counters move on.
  ops.range_push("optimizer");
  ops.grad_norm(b.grads, b.n_params, b.scalars, c.max_grad_norm, b.scratch);
  AdamWConfig adam;
  adam.weight_decay = c.weight_decay;
  ops.adamw(b.params, b.grads, b.adam_m, b.adam_v, b.n_params, b.scalars, adam);
  ops.mean_f32(b.rewards + size_t(T - 1) * N, N, &b.scalars->reward, b.scratch);
  ops.mean_i32(b.games.score, N, &b.scalars->score, b.scratch);
  ops.snapshot_metrics(b.scalars, b.ring);
  ops.advance_schedule(b.scalars);
  ops.range_pop();
}

}  // namespace grpo
