// The loss pass's policy head in two row-local passes on the GPU (issue 16 item 2). For M rows of
// the fc1 output a1 [M, H] (before its bias), with h2 = dropout(gelu(a1 + b1)):
//   logits = h2 W_out^T + b_out, the objective's loss and dlogits (kernels/policy_head.h),
//   da1 = (dlogits W_out) * keep/(1-p) * gelu'(a1 + b1),
//   g_w_out = dlogits^T h2, g_b_out = column sums of dlogits, g_b1 = column sums of da1,
//   *loss = mean of the rows' losses.
// The same results as the seven ops of Ops::policy_head_loss's default composition, but h2 and
// dh2 never exist: pass 1 (a warp per row) reads a1 once for the logits and the loss; pass 2
// (the two-stage column reduction of activations_colsum.h, four sums per column) reads a1 again,
// recomputes h2 and writes da1. Three passes over [M, H] instead of eight, and five launches
// instead of eleven. Every sum is a fixed tree or a fixed order: bitwise reproducible.
// The host twin is that composition of host twins (Ops::policy_head_loss's default on HostOps;
// the host executor runs its own fused pass, engine/host/head_loss.h); the CUDA executor takes
// this one (CudaOps::policy_head_loss). Its dot products are fp32 FMAs whatever --tf32 says
// (the composition ran the fc_out products through cuBLAS, in TF32 under --tf32).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/activations_colsum.h"
#include "kernels/bf16.h"
#include "kernels/dropout.h"
#include "kernels/policy_head.h"

namespace grpo {

struct HeadLossArgs {
  const float *a1, *b1, *w_out, *b_out;  // [M, H]; [H]; [3, H]; [3]
  const int32_t* actions;                // [M]
  const float* adv;                      // [M]
  int M, H;
  PolicyObjective objective;               // its old_logp, if any, is [M] like adv
  DropoutSpec drop;                        // row i of the mask is row i of this call
  float *logits, *dlogits;                 // [M, 3] each, written
  float* da1;                              // [M, H], written; may alias neither a1 nor any input
  float *g_b1, *g_w_out, *g_b_out, *loss;  // [H], [3, H], [3], one float: overwritten
  float* scratch;                          // head_loss_scratch_floats(M, H)
  Bf16* da1_bf16 = nullptr;                // [M, H], or nullptr: da1 rounded to bf16 goes here
                                           // instead, and da1 is left as it was (--precision bf16)
};

namespace head_loss {
constexpr unsigned kRowsPerBlock = 32;  // pass 1: 8 warps of 4 rows
constexpr unsigned kPartials = 4;       // pass 1, per block: the loss and the three dlogits sums
inline size_t pass1_blocks(int M) { return (size_t(M) + kRowsPerBlock - 1) / kRowsPerBlock; }
}  // namespace head_loss

// Scratch floats head_loss_cuda needs: pass 2's four column sums per row chunk, then pass 1's
// partials.
inline size_t head_loss_scratch_floats(int M, int H) {
  return 4 * size_t(colsum::chunks(size_t(M))) * size_t(H) + head_loss::kPartials * head_loss::pass1_blocks(M);
}

#if defined(GRPO_HAVE_CUDA)
// Throws std::invalid_argument for M < 1, H < 1 or a bad dropout spec.
void head_loss_cuda(const HeadLossArgs& a, cudaStream_t stream);
#endif

}  // namespace grpo
