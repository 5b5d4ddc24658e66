// Host twin of the fused AdamW kernel (kernels/adamw.cu): the same per-element function.
#include "kernels/adamw.h"

namespace grpo {

void adamw_host(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                const AdamWConfig& cfg, const WeightCopies& copies) {
  if (s->nonfinite != 0) return;  // apex's no-op flag: the whole update is skipped
  const AdamWCoeffs k = adamw_coeffs(s->lr, s->adam_step, s->clip_scale, cfg);
  for (size_t i = 0; i < n; ++i) {
    adamw_element(params[i], grads[i], m[i], v[i], k);
    copies.put(i, params[i]);
  }
}

}  // namespace grpo
