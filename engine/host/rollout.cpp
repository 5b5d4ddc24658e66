#include "engine/host/rollout.h"

#include <algorithm>
#include <vector>

#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "cpu/matmul_avx512.h"
#include "cpu/parallel.h"
#include "kernels/policy_head.h"

namespace grpo {

namespace {
// Groups of at least 64 games, an even number of them: the split depends on the shape alone (never
// on the thread count) and two threads share it evenly. At the small preset (136 games) that is
// two groups of 68. Fewer, larger groups beat more, smaller ones: the products want rows
// (the measurements are in this line's commit history).
inline int rollout_groups(int N) { return std::max(1, 2 * (N / 128)); }
}  // namespace

void rollout_host(const Ops::Rollout& r, const GameConfig& game, int replicas, const packed::PackedB* fc1) {
  const int T = r.T, N = r.N, D = r.D, H = r.H;
  games_reset_host(game, r.games, replicas, r.seed, r.epoch, r.obs);
  // fc_in's weight transposed once for all steps (the AVX-512 few-inputs path wants W^T).
  thread_local std::vector<float> wt;  // grows once; the workers read the caller's copy
  if (wt.size() < size_t(D) * H) wt.resize(size_t(D) * H);
  avx512mm::transpose(r.p.fc_in_w, H, D, wt.data());
  const float* fc_in_t = wt.data();  // a thread_local named inside the lambda would be the worker's own
  const bool fc1_packed = fc1 && fc1->source == r.p.fc1_w && fc1->inner == H && fc1->cols == H;

  const int groups = rollout_groups(N);
  hostpar::parallel_for(groups, [&](int gi) {
    const int g0 = int(int64_t(N) * gi / groups), g1 = int(int64_t(N) * (gi + 1) / groups), n = g1 - g0;
    for (int t = 0; t < T; ++t) {
      const size_t row = size_t(t) * N;
      const PolicyActs a = r.acts.rows_from(row, H);
      const float* obs = r.obs + (row + g0) * D;
      float *h0 = a.h0 + size_t(g0) * H, *h1 = a.h1 + size_t(g0) * H, *a1 = a.a1 + size_t(g0) * H;
      if (!avx512mm::forward_few_inputs_rows(r.obs + row * D, fc_in_t, a.h0, g0, g1, H, D))
        linear_forward_host(obs, r.p.fc_in_w, nullptr, h0, n, H, D);
      layernorm_residual_forward_host(h0, r.p.ln_gamma, r.p.ln_beta, h1, a.ln_mean + g0, a.ln_rstd + g0, n, H);
      if (!(fc1_packed && packed::gemm(h1, n, *fc1, nullptr, a1)))
        linear_forward_host(h1, r.p.fc1_w, nullptr, a1, n, H, H);
      const DropoutSpec drop{r.dropout, r.seed, Purpose::DropoutRollout, r.epoch, uint32_t(t)};
      bias_gelu_dropout_forward_rows_host(a.a1, r.p.fc1_b, a.h2, g0, g1, H, drop);
      linear_forward_host(a.h2 + size_t(g0) * H, r.p.fc_out_w, r.p.fc_out_b, a.logits + size_t(g0) * kActions, n,
                          kActions, H);
      int32_t* act = r.actions + row;
      sample_actions_rows_host(a.logits, g0, g1, r.seed, r.epoch, uint32_t(t), act);
      float* obs_next = t + 1 < T ? r.obs + (row + N) * D : nullptr;
      games_step_rows_host(game, r.games, g0, g1, act, r.seed, r.epoch, uint32_t(t), r.rewards + row, obs_next);
    }
  });
}

}  // namespace grpo
