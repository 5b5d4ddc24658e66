// Host twins of the bf16 casts (kernels/bf16.h).
#include "kernels/bf16.h"

namespace grpo {

void to_bf16_host(const float* x, Bf16* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = to_bf16(x[i]);
}

void to_float_host(const Bf16* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = to_float(x[i]);
}

}  // namespace grpo
