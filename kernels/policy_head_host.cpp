// Host twins of kernels/policy_head.cu: the same per-row maths (policy_head.h), one row after
// another; the means are summed in double.
#include <stdexcept>
#include <string>

#include "kernels/policy_head.h"
#include "kernels/reduce.h"

namespace grpo {

size_t policy_loss_scratch_floats(int M) { return 2 * reduce_blocks(M > 0 ? static_cast<size_t>(M) : 1); }

void sample_actions_host(const float* logits, int M, uint64_t seed, const uint32_t* epoch, uint32_t step,
                         int32_t* actions, float* logp_action) {
  if (M < 0) throw std::invalid_argument("sample_actions_host: M must be >= 0, got " + std::to_string(M));
  const uint32_t e = *epoch;
  for (int i = 0; i < M; ++i) {
    const PolicyRow r = policy_row(logits + 3 * static_cast<size_t>(i));
    const int32_t a = sample_from(r, action_uniform(seed, e, step, static_cast<uint32_t>(i)));
    actions[i] = a;
    if (logp_action) logp_action[i] = r.logp[a];
  }
}

void sample_actions_rows_host(const float* logits, int r0, int r1, uint64_t seed, const uint32_t* epoch, uint32_t step,
                              int32_t* actions) {
  if (r0 < 0 || r1 < r0) throw std::invalid_argument("sample_actions_rows_host: bad row range");
  const uint32_t e = *epoch;
  for (int i = r0; i < r1; ++i)
    actions[i] =
        sample_from(policy_row(logits + 3 * static_cast<size_t>(i)), action_uniform(seed, e, step, uint32_t(i)));
}

void policy_loss_host(const float* logits, const int32_t* actions, const float* adv, int M, const PolicyObjective& obj,
                      float* dlogits, float* loss_out, float* entropy_out, float* /*scratch*/) {
  if (M < 1) throw std::invalid_argument("policy_loss_host: M must be >= 1, got " + std::to_string(M));
  const float inv_m = 1.f / static_cast<float>(M);
  double loss = 0, entropy = 0;
  for (int i = 0; i < M; ++i) {
    float h;
    const size_t o = 3 * static_cast<size_t>(i);
    loss += objective_loss_row(obj, logits + o, i, actions[i], adv[i], inv_m, dlogits + o, &h);
    entropy += h;
  }
  *loss_out = static_cast<float>(loss / M);
  if (entropy_out) *entropy_out = static_cast<float>(entropy / M);
}

void action_log_probs_host(const float* logits, const int32_t* actions, int M, float* logp) {
  if (M < 0) throw std::invalid_argument("action_log_probs_host: M must be >= 0, got " + std::to_string(M));
  for (int i = 0; i < M; ++i) logp[i] = action_log_prob(logits + 3 * static_cast<size_t>(i), actions[i]);
}

}  // namespace grpo
