// The policy's head over the 3 actions: log-softmax, sampling for the rollout, and the loss
// with its gradient for the update (docs/spec/training.md, steps 2 and 5).
//
// One thread per row. PyTorch's PersistentSoftmax gives each row a warp because its rows are
// wide; a row here is 3 floats, so a warp per row would leave 29 lanes idle and add shuffles for
// nothing. With a thread per row a warp still reads one contiguous 384-byte span of logits (the
// three loads of a warp hit the same cache lines, so DRAM sees each byte once).
//
// The per-row maths below is shared by the kernels and the host twins, so that both compute
// the same formulas (they may still differ in the last bits: expf/logf and FMA contraction).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/host_device.h"
#include "core/rng.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

constexpr int kActions = 3;

struct PolicyRow {
  float logp[kActions];  // log pi(a), max-subtracted log-softmax
  float p[kActions];     // pi(a)
  float entropy;         // H = -sum p log p
};

// r.logp[action], or NaN for an action outside [0, 3). Selects, not an index: a GPU keeps an array
// indexed by a runtime value in local memory.
GRPO_HD float action_logp(const PolicyRow& r, int32_t action) {
  static_assert(kActions == 3, "one select an action");
  const float l0 = r.logp[0], l1 = r.logp[1], l2 = r.logp[2];
  return action == 0 ? l0 : action == 1 ? l1 : action == 2 ? l2 : std::numeric_limits<float>::quiet_NaN();
}

GRPO_HD PolicyRow policy_row(const float* z) {
  PolicyRow r;
  const float m = fmaxf(z[0], fmaxf(z[1], z[2]));
  float e[kActions], s = 0.f;
  for (int a = 0; a < kActions; ++a) {
    e[a] = expf(z[a] - m);
    s += e[a];
  }
  const float log_s = logf(s);  // s is in [1, 3]: the max term contributes exactly 1
  r.entropy = 0.f;
  for (int a = 0; a < kActions; ++a) {
    r.logp[a] = (z[a] - m) - log_s;
    r.p[a] = e[a] / s;
    r.entropy -= r.p[a] * r.logp[a];
  }
  return r;
}

// Inverse CDF of one uniform u in [0, 1): the first a with u < p0 + ... + pa. Rounding can leave
// the cumulative sum just below 1, so the last bucket takes everything past the second bound.
GRPO_HD int32_t sample_from(const PolicyRow& r, float u) {
  if (u < r.p[0]) return 0;
  if (u < r.p[0] + r.p[1]) return 1;
  return 2;
}

// The uniform that samples row `row` at rollout step `step` of epoch `epoch`.
GRPO_HD float action_uniform(uint64_t seed, uint32_t epoch, uint32_t step, uint32_t row) {
  return bits_to_uniform(draw4(seed, Purpose::Action, epoch, step, row).x);
}

// One sample of the loss: l = -logp(a) * clamp(A, -5, 5) - c * H. Writes dl/dz * inv_m to dz:
// d(-logp_a)/dz_j = p_j - [j == a] and dH/dz_j = -p_j (logp_j + H). An action outside [0, 3)
// makes the loss NaN (loud) instead of reading a neighbour's logit.
GRPO_HD float policy_loss_row(const float* z, int32_t action, float adv, float entropy_coef, float inv_m, float* dz,
                              float* entropy) {
  const PolicyRow r = policy_row(z);
  const float a_clamped = fminf(fmaxf(adv, -5.f), 5.f);
  const float logp_a = action_logp(r, action);
  for (int j = 0; j < kActions; ++j) {
    const float onehot = j == action ? 1.f : 0.f;
    const float g = a_clamped * (r.p[j] - onehot) + entropy_coef * r.p[j] * (r.logp[j] + r.entropy);
    dz[j] = g * inv_m;
  }
  *entropy = r.entropy;
  return -logp_a * a_clamped - entropy_coef * r.entropy;
}

// What the loss optimises (docs/spec/training.md). old_logp == nullptr: the reference's
// objective, policy_loss_row. Otherwise --algo grpo's, grpo_loss_row, with old_logp[i] the
// rollout policy's log pi_old(a_i), clip = epsilon of the clipped ratio and kl_beta the weight of
// the KL penalty to the rollout policy. Trivially copyable: passed to kernels by value.
struct PolicyObjective {
  float entropy_coef = 0.01f;
  const float* old_logp = nullptr;
  float clip = 0.2f;
  float kl_beta = 0.f;
};

// One sample of --algo grpo's loss, with rho = exp(logp(a) - old_logp) and A unclamped:
//   l = -min(rho A, clamp(rho, 1 - clip, 1 + clip) A) + kl_beta k3 - c H,
//   k3 = exp(old_logp - logp(a)) - (old_logp - logp(a)) - 1 (the estimator of KL(pi || pi_old)).
// The surrogate's gradient flows through rho A when that branch is the minimum or both are equal,
// i.e. unless the ratio is clipped against the advantage (A >= 0 and rho > 1 + clip, or A < 0 and
// rho < 1 - clip); then only the entropy and KL terms move the row. dl/dlogp(a) = w with
// w = -[unclipped] rho A + kl_beta (1 - exp(old_logp - logp(a))); dz_j = (w ([j == a] - p_j)
// + c p_j (logp_j + H)) * inv_m.
GRPO_HD float grpo_loss_row(const float* z, int32_t action, float adv, float old_logp, float clip, float kl_beta,
                            float entropy_coef, float inv_m, float* dz, float* entropy) {
  const PolicyRow r = policy_row(z);
  const float logp_a = action_logp(r, action);
  const float rho = expf(logp_a - old_logp);
  const float rho_clipped = fminf(fmaxf(rho, 1.f - clip), 1.f + clip);
  const float surrogate = fminf(rho * adv, rho_clipped * adv);
  const bool unclipped = adv >= 0.f ? rho <= 1.f + clip : rho >= 1.f - clip;
  const float back = old_logp - logp_a;  // log(pi_old / pi)
  const float e_back = expf(back);
  const float kl = e_back - back - 1.f;
  const float w = (unclipped ? -rho * adv : 0.f) + kl_beta * (1.f - e_back);
  for (int j = 0; j < kActions; ++j) {
    const float onehot = j == action ? 1.f : 0.f;
    const float g = w * (onehot - r.p[j]) + entropy_coef * r.p[j] * (r.logp[j] + r.entropy);
    dz[j] = g * inv_m;
  }
  *entropy = r.entropy;
  return -surrogate + kl_beta * kl - entropy_coef * r.entropy;
}

// One row of the objective's loss, its inputs already read (old_logp: the row's o.old_logp[i],
// ignored by the reference's objective): the one place the two algorithms branch per row.
GRPO_HD float objective_loss(const PolicyObjective& o, const float* z, int32_t action, float adv, float old_logp,
                             float inv_m, float* dz, float* entropy) {
  if (o.old_logp == nullptr) return policy_loss_row(z, action, adv, o.entropy_coef, inv_m, dz, entropy);
  return grpo_loss_row(z, action, adv, old_logp, o.clip, o.kl_beta, o.entropy_coef, inv_m, dz, entropy);
}

// Row i of the objective's loss.
GRPO_HD float objective_loss_row(const PolicyObjective& o, const float* z, int i, int32_t action, float adv,
                                 float inv_m, float* dz, float* entropy) {
  return objective_loss(o, z, action, adv, o.old_logp ? o.old_logp[i] : 0.f, inv_m, dz, entropy);
}

// Rollout sampling for M rows of logits [M, 3]:
//   actions[i] = inverse-CDF sample with u = bits_to_uniform(draw4(seed, Action, *epoch, step, i).x)
//   logp_action[i] = log pi(actions[i])   (nullable; kept for PPO ratios)
// `epoch` is read through a pointer (device memory for the launcher) so a replayed graph draws
// fresh numbers every epoch.
void sample_actions_host(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                         int32_t* actions, float* logp_action);

// Host only: rows [r0, r1) of sample_actions_host (row indices as in the whole call), on the
// calling thread.
void sample_actions_rows_host(const float* logits, int r0, int r1, uint64_t seed, const uint32_t* epoch, uint32_t step,
                              int32_t* actions);

// Loss over M samples: L = mean_i of objective_loss_row (for the reference objective
// -logp_i(a_i) clamp(A_i, -5, 5) - entropy_coef H_i).
//   dlogits[M, 3] = dL/dz (1/M included); *loss_out = L; *entropy_out = mean H (nullable).
// loss_out/entropy_out are device scalars for the launcher. Deterministic two-stage mean:
// scratch holds policy_loss_scratch_floats(M) floats (unused by the host twin). M >= 1.
size_t policy_loss_scratch_floats(int M);
void policy_loss_host(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                      float* dlogits, float* loss_out, float* entropy_out, float* scratch);

// logp[i] = log pi(actions[i] | logits row i): the rollout policy's log-probabilities that
// --algo grpo keeps for its ratios (NaN for an action outside [0, 3)). M >= 0.
GRPO_HD float action_log_prob(const float* z, int32_t action) { return action_logp(policy_row(z), action); }
void action_log_probs_host(const float* logits, const int32_t* actions, int M, float* logp);

#if defined(GRPO_HAVE_CUDA)
void sample_actions_cuda(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                         int32_t* actions, float* logp_action, cudaStream_t stream);
void policy_loss_cuda(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                      float* dlogits, float* loss_out, float* entropy_out, float* scratch, cudaStream_t stream);
void action_log_probs_cuda(const float* logits, const int32_t* actions, int M, float* logp, cudaStream_t stream);
#endif

}  // namespace grpo
