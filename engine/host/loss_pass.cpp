#include "engine/host/loss_pass.h"

#include <algorithm>

#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "cpu/parallel.h"
#include "kernels/policy_head.h"

namespace grpo {

namespace {
// Rows per block, the fastest of 256..2048 at the small preset (measurements in the commit
// history): larger blocks give the products longer runs per call; smaller ones keep the
// block's arrays (a1, da1, h1, dh1, h0: 10 MB at H = 512) nearer the cores.
constexpr int kBlockRows = 1024;
}  // namespace

void loss_pass_host(const Ops::LossPass& l, LossPassScratch& s) {
  const Ops::HeadLoss& h = l.head;
  const int M = h.M, H = h.H, D = l.D;
  const int B = std::min(M, kBlockRows);
  const size_t BH = size_t(B) * H;
  if (s.da1.size() < BH) s.da1.resize(BH);
  if (s.dh1.size() < BH) s.dh1.resize(BH);
  const size_t ln_need = layernorm_input_backward_partial_floats(B, H, D);
  if (s.ln_partial.size() < ln_need) s.ln_partial.resize(ln_need);
  // One block's gradients, then their running totals in double, in this order:
  // fc1.bias [H], fc_out.weight [3H], fc_out.bias [3], gamma [H], beta [H], fc_in.weight [H D].
  const size_t n_tot = size_t(H) * (1 + kActions + 2 + D) + kActions;
  if (s.block_grads.size() < n_tot) s.block_grads.resize(n_tot);
  s.totals.assign(n_tot, 0.0);
  float* bg = s.block_grads.data();
  float *b_b1 = bg, *b_wout = b_b1 + H, *b_bout = b_wout + kActions * size_t(H), *b_gamma = b_bout + kActions,
        *b_beta = b_gamma + H, *b_win = b_beta + H;
  double loss = 0;

  for (int r0 = 0; r0 < M; r0 += B) {
    const int rows = std::min(B, M - r0);
    const size_t o = size_t(r0) * H;
    Ops::HeadLoss hb = h;
    hb.a1 = h.a1 + o;
    hb.actions = h.actions + r0;
    hb.adv = h.adv + r0;
    if (h.objective.old_logp) hb.objective.old_logp = h.objective.old_logp + r0;
    hb.M = rows;
    hb.logits = h.logits + size_t(r0) * kActions;
    hb.dlogits = h.dlogits + size_t(r0) * kActions;
    hb.da1 = s.da1.data();
    hb.g_b1 = b_b1;
    hb.g_w_out = b_wout;
    hb.g_b_out = b_bout;
    double block_loss = 0;
    policy_head_loss_host(hb, s.head, HeadBlock{r0, M, &block_loss});
    loss += block_loss;

    // dW1 (+)= da1^T h1 and dh1 = da1 W1 are independent and equal in FLOPs: one thread each,
    // every operand packed once (split over threads, each product packed h1 or W1 twice).
    hostpar::parallel_for(2, [&](int task) {
      if (task == 0)
        linear_backward_weight_host(s.da1.data(), l.acts.h1 + o, l.g.fc1_w, rows, H, H, r0 > 0);
      else
        linear_backward_input_host(s.da1.data(), l.p.fc1_w, s.dh1.data(), rows, H, H);
    });
    layernorm_input_backward_host(s.dh1.data(), l.acts.h0 + o, l.X + size_t(r0) * D, l.p.ln_gamma, l.acts.ln_mean + r0,
                                  l.acts.ln_rstd + r0, b_gamma, b_beta, b_win, rows, H, D, s.ln_partial.data());
    for (size_t i = 0; i < n_tot; ++i) s.totals[i] += bg[i];
  }

  auto out = [&](float* dst, size_t at, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = float(s.totals[at + i]);
  };
  size_t at = 0;
  out(l.g.fc1_b, at, H), at += H;
  out(l.g.fc_out_w, at, kActions * size_t(H)), at += kActions * size_t(H);
  out(l.g.fc_out_b, at, kActions), at += kActions;
  out(l.g.ln_gamma, at, H), at += H;
  out(l.g.ln_beta, at, H), at += H;
  out(l.g.fc_in_w, at, size_t(H) * D);
  *h.loss = float(loss / M);
}

}  // namespace grpo
