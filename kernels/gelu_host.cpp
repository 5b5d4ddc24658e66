// Host twins of gelu.cu. Column sums accumulate in double, columns in parallel (the result does
// not depend on the thread count).
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/gelu.h"

namespace grpo {

namespace {
void check_shape(int M, int N, const char* op) {
  if (M < 0 || N < 0) throw std::invalid_argument(std::string(op) + ": negative shape");
}
}  // namespace

void bias_gelu_dropout_forward_host(const float* a, const float* bias, float* out, int M, int N,
                                    const DropoutSpec& spec) {
  check_dropout(spec, "bias_gelu_dropout_forward_host");
  check_shape(M, N, "bias_gelu_dropout_forward_host");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const float scale = dropout_scale(spec.p);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    for (int g = 0; 4 * g < N; ++g) {
      const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, uint32_t(r), uint32_t(g));
      for (int k = 0; k < 4 && 4 * g + k < N; ++k) {
        const int c = 4 * g + k;
        const size_t i = size_t(r) * N + c;
        out[i] = (keep >> k & 1u) ? gelu(a[i] + bias[c]) * scale : 0.f;
      }
    }
  }
}

void bias_gelu_dropout_backward_host(const float* dout, const float* a, const float* bias, float* da,
                                     float* dbias, int M, int N, const DropoutSpec& spec, float* /*scratch*/) {
  check_dropout(spec, "bias_gelu_dropout_backward_host");
  check_shape(M, N, "bias_gelu_dropout_backward_host");
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const float scale = dropout_scale(spec.p);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < M; ++r) {
    for (int g = 0; 4 * g < N; ++g) {
      const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, uint32_t(r), uint32_t(g));
      for (int k = 0; k < 4 && 4 * g + k < N; ++k) {
        const int c = 4 * g + k;
        const size_t i = size_t(r) * N + c;
        da[i] = (keep >> k & 1u) ? dout[i] * scale * gelu_grad(a[i] + bias[c]) : 0.f;
      }
    }
  }
  // dbias: blocks of 16 columns per thread keep the row-major reads in whole cache lines.
  const int blocks = (N + 15) / 16;
#pragma omp parallel for schedule(static)
  for (int b = 0; b < blocks; ++b) {
    double s[16] = {};
    const int c0 = 16 * b, c1 = std::min(N, c0 + 16);
    for (int r = 0; r < M; ++r)
      for (int c = c0; c < c1; ++c) s[c - c0] += da[size_t(r) * N + c];
    for (int c = c0; c < c1; ++c) dbias[c] = float(s[c - c0]);
  }
}

}  // namespace grpo
