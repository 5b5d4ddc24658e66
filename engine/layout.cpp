#include "engine/layout.h"

#include <algorithm>

#include "engine/metrics_ring.h"
#include "env/games.h"
#include "kernels/fc_in.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/head_loss.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"

namespace grpo {

ParamLayout::ParamLayout(int hidden, int obs_dim) {
  const struct {
    const char* name;
    int rows, cols;
  } shapes[kCount] = {{"fc_in.weight", hidden, obs_dim}, {"layer_norm.weight", hidden, 1},
                      {"layer_norm.bias", hidden, 1},    {"fc1.weight", hidden, hidden},
                      {"fc1.bias", hidden, 1},           {"fc_out.weight", kActions, hidden},
                      {"fc_out.bias", kActions, 1}};
  for (int i = 0; i < kCount; ++i) {
    tensors[i] = {shapes[i].name, shapes[i].rows, shapes[i].cols, total};
    total += align4(tensors[i].size());
    count += tensors[i].size();
  }
}

ParamViews ParamViews::over(float* slab, const ParamLayout& l) {
  auto at = [&](int i) { return slab + l[i].offset; };
  return {at(ParamLayout::FcInW), at(ParamLayout::LnGamma), at(ParamLayout::LnBeta), at(ParamLayout::Fc1W),
          at(ParamLayout::Fc1B),  at(ParamLayout::FcOutW),  at(ParamLayout::FcOutB)};
}

ArenaLayout::ArenaLayout(const TrainConfig& c) {
  const size_t M = size_t(c.samples()), N = size_t(c.games()), D = size_t(c.obs_dim()), H = size_t(c.hidden_size);
  const int m = int(M), h = c.hidden_size;
  const ParamLayout params(c.hidden_size, c.obs_dim());
  scratch_floats = std::max({bias_grad_scratch_floats(m, kActions), layernorm_residual_backward_scratch_floats(m, h),
                             bias_gelu_dropout_backward_scratch_floats(m, h), policy_loss_scratch_floats(m),
                             normalize_advantages_scratch_floats(m), grad_norm_scratch_floats(params.total),
                             mean_scratch_floats(int(N)), head_loss_scratch_floats(m, h),
                             layernorm_input_backward_scratch_floats(m, h, int(D))});
  size_t at = 0;
  // 256-byte alignment: every view starts on its own cache lines and suits float4 access.
  auto take = [&](size_t bytes) {
    const size_t here = at;
    at += (bytes + 255) & ~size_t{255};
    return here;
  };
  obs = take(M * D * sizeof(float));
  actions = take(M * sizeof(int32_t));
  rewards = take(M * sizeof(float));
  returns = take(M * sizeof(float));
  advantages = take(M * sizeof(float));
  old_logp = take(c.algo == Algo::Grpo ? M * sizeof(float) : 0);
  h0 = take(M * H * sizeof(float));
  h1 = take(M * H * sizeof(float));
  a1 = take(M * H * sizeof(float));
  h2 = take(M * H * sizeof(float));
  logits = take(M * kActions * sizeof(float));
  ln_mean = take(M * sizeof(float));
  ln_rstd = take(M * sizeof(float));
  const bool bf16 = c.precision == Precision::Bf16;
  h1_bf16 = take(bf16 ? M * H * sizeof(Bf16) : 0);
  da1_bf16 = take(bf16 ? M * H * sizeof(Bf16) : 0);
  fc1_w_bf16 = take(bf16 ? H * H * sizeof(Bf16) : 0);
  fc_in_w_t = take(D * fc_in_t_pitch(h) * sizeof(float));
  trunk_work = take(M * H * sizeof(float));
  dlogits = take(M * kActions * sizeof(float));
  games = take(games_state_bytes(c.game, int(N)));
  adv_stats = take(2 * sizeof(float));
  scalars = take(sizeof(TrainScalars));
  best = take(3 * params.total * sizeof(float));
  best_scalars = take(sizeof(TrainScalars));
  metrics = take(kMetricsRing * sizeof(TrainScalars));
  scratch = take(scratch_floats * sizeof(float));
  total = at;
}

}  // namespace grpo
