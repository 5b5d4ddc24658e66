// Host twin of the gradient-norm kernels (kernels/grad_norm.cu).
#include "kernels/grad_norm.h"

namespace grpo {

void grad_norm_host(const float* grads, size_t n, TrainScalars* s, float max_norm, float* /*scratch*/) {
  double sumsq = 0.0;
  for (size_t i = 0; i < n; ++i) sumsq += static_cast<double>(grads[i]) * grads[i];
  grad_norm_finish(sumsq, max_norm, s);
}

}  // namespace grpo
