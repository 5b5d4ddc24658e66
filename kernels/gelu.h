// tanh-GELU and the fused hidden-layer activation of the policy network (docs/spec/training.md):
//   forward:  out = dropout(gelu(a + bias))                      a, out: [M, N]; bias: [N]
//   backward: da  = dout * keep/(1-p) * gelu'(a + bias);  dbias = column sums of da
// `a` is the GEMM output W1 h1 (kept for backward); the dropout mask is recomputed from the
// same DropoutSpec, never stored. dbias uses the deterministic two-stage reduction
// (activations_colsum.h) through caller-provided scratch; no float atomics.
#pragma once
#include <cmath>
#include <cstddef>

#include "kernels/activations_colsum.h"
#include "kernels/dropout.h"
#include "core/host_device.h"

namespace grpo {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
GRPO_HD float gelu(float x) {
  const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
  return 0.5f * x * (1.f + t);
}

// d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
GRPO_HD float gelu_grad(float x) {
  const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluC * (1.f + 3.f * kGeluA * x * x);
}

// gelu(x), and its derivative in `grad`, from one tanh.
GRPO_HD float gelu_and_grad(float x, float& grad) {
  const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
  grad = 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluC * (1.f + 3.f * kGeluA * x * x);
  return 0.5f * x * (1.f + t);
}

// Scratch floats bias_gelu_dropout_backward needs (the same for host and cuda; host ignores it).
inline size_t bias_gelu_dropout_backward_scratch_floats(int M, int N) {
  return size_t(colsum::chunks(size_t(M))) * size_t(N);
}

void bias_gelu_dropout_forward_host(const float* a, const float* bias, float* out, int M, int N,
                                    const DropoutSpec& spec);
void bias_gelu_dropout_backward_host(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                     int M, int N, const DropoutSpec& spec, float* scratch);
// Host only: rows [r0, r1) of the forward (mask rows as in the whole call), on the calling thread.
void bias_gelu_dropout_forward_rows_host(const float* a, const float* bias, float* out, int r0, int r1, int N,
                                         const DropoutSpec& spec);
#if defined(GRPO_HAVE_CUDA)
void bias_gelu_dropout_forward_cuda(const float* a, const float* bias, float* out, int M, int N,
                                    const DropoutSpec& spec, cudaStream_t stream);
void bias_gelu_dropout_backward_cuda(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                     int M, int N, const DropoutSpec& spec, float* scratch, cudaStream_t stream);
#endif

}  // namespace grpo
