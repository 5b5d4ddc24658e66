// LayerNorm of gelu(h0) with the residual fused, as in the policy network (docs/spec/training.md):
//   g = gelu(h0);  mean, var = Welford over the row (biased variance);  rstd = 1/sqrt(var + 1e-5)
//   h1 = h0 + (g - mean) * rstd * gamma + beta
// h0, h1, dh1, dh0: [M, N]; gamma, beta, dgamma, dbeta: [N]; mean, rstd: [M] (saved for backward).
// N from 8 to 8192: the kernels use a warp per row up to 1024 columns, a block per row above.
// Backward, with xhat = (g - mean) * rstd and dxhat = dh1 * gamma:
//   dh0 = dh1 + gelu'(h0) * rstd * (dxhat - mean_row(dxhat) - xhat * mean_row(dxhat * xhat))
//   dgamma = column sums of dh1 * xhat;  dbeta = column sums of dh1   (overwritten, not added)
// dgamma/dbeta use the deterministic two-stage reduction through caller-provided scratch.
#pragma once
#include <cstddef>

#include "kernels/activations_colsum.h"
#include "kernels/bf16.h"
#include "kernels/layernorm_input_onepass.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

constexpr float kLayerNormEps = 1e-5f;
constexpr int kLayerNormMinN = 8, kLayerNormMaxN = 8192;

// Scratch floats layernorm_residual_backward needs (the same for host and cuda; host ignores it).
inline size_t layernorm_residual_backward_scratch_floats(int M, int N) {
  return 2 * size_t(colsum::chunks(size_t(M))) * size_t(N);
}

void layernorm_residual_forward_host(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N);
void layernorm_residual_backward_host(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                      const float* rstd, float* dh0, float* dgamma, float* dbeta, int M, int N,
                                      float* scratch);

// Host only (HostOps fuses Ops::layernorm_input_backward with it): the backward above, then
// dW_in[N, D] = dh0^T X without ever writing dh0. Each row's dh0 stays in L1 and is added into
// its fixed row chunk's partial dW_in at once; chunks are added in order (thread-count
// independent). partial holds layernorm_input_backward_partial_floats(M, N, D) floats.
inline size_t layernorm_input_backward_partial_floats(int M, int N, int D) {
  return size_t(colsum::chunks(size_t(M))) * size_t(N) * size_t(2 + D);
}
void layernorm_input_backward_host(const float* dh1, const float* h0, const float* X, const float* gamma,
                                   const float* mean, const float* rstd, float* dgamma, float* dbeta, float* dW_in,
                                   int M, int N, int D, float* partial);

// The same op on the GPU (CudaOps fuses Ops::layernorm_input_backward with it), for D up to
// kLayerNormMaxObs (the game's observation: 1 + 3 Fmax <= 25); dh0 is never written, and dW_in
// needs no product (so it is fp32 under --tf32 too). Two ways, by shape:
// - When layernorm_input_backward_recomputes_h0(N, D) (N <= 2048 and D <= 10: both presets) and
//   the device's shared memory holds it (layernorm_onepass::fits_device: sm_90's does), one pass
//   over dh1 (kernels/layernorm_input_onepass.h) that recomputes h0 = X W_in^T at each
//   element and never reads h0 (which may then be nullptr). Its h0 is an fmaf chain over d
//   ascending from 0, as fc_in_forward_cuda and the rollout's fused step compute it: mean and
//   rstd must come from that h0.
// - Otherwise a stats-only row kernel writes each row's two means, then a column pass (a lane per
//   column, 8 warps over a row chunk) reads h0 and dh1 again, recomputes dh0 and sums dgamma,
//   dbeta and dW_in's D columns.
// Its host twin is the composition (the backward above, then the product); scratch holds
// layernorm_input_backward_scratch_floats(M, N, D) floats.
constexpr int kLayerNormMaxObs = 25;
inline size_t layernorm_input_backward_scratch_floats(int M, int N, int D) {
  return layernorm_input_backward_partial_floats(M, N, D) + 2 * size_t(M);
}
inline bool layernorm_input_backward_recomputes_h0(int N, int D) {
  return N <= layernorm_onepass::kMaxN && D >= 1 && D <= layernorm_onepass::kMaxD;
}
#if defined(GRPO_HAVE_CUDA)
// h1_bf16, when given: h1 rounded to bf16 is written there instead of h1 (--precision bf16,
// where fc1's products read only the copy); h1 is then left as it was.
void layernorm_residual_forward_cuda(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N, cudaStream_t stream, Bf16* h1_bf16 = nullptr);
void layernorm_residual_backward_cuda(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                      const float* rstd, float* dh0, float* dgamma, float* dbeta, int M, int N,
                                      float* scratch, cudaStream_t stream);
// Throws std::invalid_argument for a shape outside the above.
void layernorm_input_backward_cuda(const float* dh1, const float* h0, const float* X, const float* W_in,
                                   const float* gamma, const float* mean, const float* rstd, float* dgamma,
                                   float* dbeta, float* dW_in, int M, int N, int D, float* scratch,
                                   cudaStream_t stream);
#endif

// Throws std::invalid_argument unless 8 <= N <= 8192 and M >= 0.
void check_layernorm_shape(int M, int N, const char* op);

}  // namespace grpo
