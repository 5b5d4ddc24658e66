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

// The spec's 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated as x s with
// s = 0.5 (1 + tanh u) = 1 / (1 + e), e = exp(-2u): the logistic function of 2u. Then
//   gelu' = 0.5 (1 + t) + 0.5 x (1 - t^2) u' = s + 2 x s (1 - s) u',  1 - s = e s,
// u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2). On a GPU that is one exponential and one reciprocal
// (MUFU.EX2 and MUFU.RCP: __expf, __fdividef), fewer instructions than tanhf (~16: the same two,
// a polynomial for small u and its selects), and s keeps its relative precision where
// 0.5 (1 + tanh u) loses it to cancellation (tanh u near -1). These are the hot elementwise
// maths of the loss pass and the rollout step, both bound by issue. The host (the tests, and the emulator,
// which runs the kernels on the CPU) takes expf and a division: the same formula, rounded
// within a few ulps of the GPU's. e is clamped at e^80 so that 1 + e and e s stay finite where
// x is very negative (s ~ 1.8e-35 there, gelu within |x| 1.8e-35 of 0).
struct GeluSigmoid {
  float e, s;  // exp(-2u), 1 / (1 + e)
};

GRPO_HD GeluSigmoid gelu_sigmoid(float x) {
  const float m2u = fminf(-2.f * kGeluC * x * fmaf(kGeluA, x * x, 1.f), 80.f);
#if defined(__CUDA_ARCH__)
  const float e = __expf(m2u);
  return {e, __fdividef(1.f, 1.f + e)};
#else
  const float e = expf(m2u);
  return {e, 1.f / (1.f + e)};
#endif
}

GRPO_HD float gelu(float x) { return x * gelu_sigmoid(x).s; }

// gelu(x), and its derivative in `grad`, from one exponential: gelu's bits exactly.
GRPO_HD float gelu_and_grad(float x, float& grad) {
  const GeluSigmoid g = gelu_sigmoid(x);
  const float du = 2.f * kGeluC * fmaf(3.f * kGeluA, x * x, 1.f);  // 2 u'
  grad = fmaf(du * x, (g.e * g.s) * g.s, g.s);
  return x * g.s;
}

GRPO_HD float gelu_grad(float x) {
  float grad;
  (void)gelu_and_grad(x, grad);
  return grad;
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
