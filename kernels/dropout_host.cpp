// Host twin of dropout.cu: the same counters, so the same mask bit for bit.
#include <cstddef>

#include "kernels/dropout.h"

namespace grpo {

void dropout_apply_host(const float* x, float* y, int M, int N, const DropoutSpec& spec) {
  check_dropout(spec, "dropout_apply_host");
  if (M < 0 || N < 0) throw std::invalid_argument("dropout_apply_host: negative shape");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const float scale = dropout_scale(spec.p);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    for (int g = 0; 4 * g < N; ++g) {
      const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, uint32_t(r), uint32_t(g));
      for (int k = 0; k < 4 && 4 * g + k < N; ++k) {
        const size_t i = size_t(r) * N + 4 * g + k;
        y[i] = (keep >> k & 1u) ? x[i] * scale : 0.f;
      }
    }
  }
}

}  // namespace grpo
