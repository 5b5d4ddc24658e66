// fc_in (the policy's first layer, no bias) in one fixed order: h0[r, c] = sum over d of
// X[r, d] W_in[c, d] as an fmaf chain over d ascending from 0. The rollout's fused step
// (engine/cuda/rollout_step_block.cuh) computes its next h0 in this order, and the LayerNorm input
// backward recomputes h0 so instead of reading it (kernels/layernorm_input_onepass.h): on the
// CUDA executor every h0 is these bits, so the statistics the forward saved fit the recomputed h0
// exactly. X [M, D], W_in [N, D] (PyTorch's [out, in]), h0 [M, N].
#pragma once
#include <cmath>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

GRPO_HD float fc_in_dot(const float* x, const float* w, int D) {
  float acc = 0.f;
  for (int d = 0; d < D; ++d) acc = fmaf(x[d], w[d], acc);
  return acc;
}

#if defined(GRPO_HAVE_CUDA)
// One input's term of four neighbouring outputs in fc_in_dot's order (x: the input, w: its four
// weights): the kernels that compute h0 four columns at a time add their terms with it, d
// ascending from acc = 0, so that every h0 has fc_in_dot's bits.
GRPO_HD void fc_in_add4(float x, const float4& w, float (&acc)[4]) {
  acc[0] = fmaf(x, w.x, acc[0]);
  acc[1] = fmaf(x, w.y, acc[1]);
  acc[2] = fmaf(x, w.z, acc[2]);
  acc[3] = fmaf(x, w.w, acc[3]);
}
#endif

void fc_in_forward_host(const float* X, const float* W_in, float* h0, int M, int N, int D);
#if defined(GRPO_HAVE_CUDA)
// Throws std::invalid_argument unless M >= 0, N >= 1 and D >= 1.
void fc_in_forward_cuda(const float* X, const float* W_in, float* h0, int M, int N, int D, cudaStream_t stream);
#endif

// W_in transposed for the rollout's fused step: W_inT[d * pitch + c] = W_in[c, d] for c < N, 0 in
// the padding up to pitch = N rounded up to 4. A thread that owns four neighbouring outputs then
// reads its four weights of input d as one 16-byte load that its warp's neighbours continue,
// where W_in's rows (D floats apart) scatter a warp's loads over 32 cache lines or, in shared
// memory, 8-way bank conflicts at D = 10.
GRPO_HD unsigned fc_in_t_pitch(int N) { return (unsigned(N) + 3u) / 4u * 4u; }
void fc_in_transpose_host(const float* W_in, float* W_inT, int N, int D);
#if defined(GRPO_HAVE_CUDA)
// Throws std::invalid_argument unless N >= 1 and D >= 1.
void fc_in_transpose_cuda(const float* W_in, float* W_inT, int N, int D, cudaStream_t stream);
#endif

}  // namespace grpo
