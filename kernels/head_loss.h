// The loss pass's policy head on the GPU in one pass over the rows (issue 16 item 2). For M rows
// of the fc1 output a1 [M, H] (before its bias), with h2 = dropout(gelu(a1 + b1)):
//   logits = h2 W_out^T + b_out, the objective's loss and dlogits (kernels/policy_head.h),
//   da1 = (dlogits W_out) * keep/(1-p) * gelu'(a1 + b1),
//   g_w_out = dlogits^T h2, g_b_out = column sums of dlogits, g_b1 = column sums of da1,
//   *loss = mean of the rows' losses.
// The same results as the seven ops of Ops::policy_head_loss's default composition, but h2 and
// dh2 never exist. Up to H = 2048 a block per row chunk reads each a1 row once, holds h2 and
// gelu' in registers while the row's logits meet, and keeps its columns' sums in registers
// (head_loss.cu): one pass over [M, H] and one GELU and dropout mask an element. Wider layers
// take two passes (head_loss_wide.cu), each reading a1 and computing both. Either way one more
// launch finishes the sums over row chunks (colsum's second stage, activations_colsum.h): two
// launches in all (three when wider) instead of eleven. Every sum is a fixed tree or a fixed
// order: bitwise reproducible.
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
constexpr unsigned kRowsPerBlock = 32;  // the two passes' pass 1: 8 warps of 4 rows
constexpr unsigned kPartials = 4;       // per block: the loss and the three dlogits sums
inline size_t pass1_blocks(int M) { return (size_t(M) + kRowsPerBlock - 1) / kRowsPerBlock; }

// The one-pass kernel's shape for width H: a thread takes `groups_per_thread` groups of four
// columns (1 up to H = 256, 2 up to 2048) in a team of `team` threads a row (the least power of
// two from 32 that covers the row: at H 512 four teams of 64, at 2048 one of 256). Two groups a
// thread halve the teams' threads, so a round holds twice the rows and its serial part and
// barriers come half as often a row. groups_per_thread 0: wider, the two passes run instead.
struct OnePass {
  unsigned groups_per_thread, team;
};
inline OnePass one_pass(int H) {
  const unsigned groups = (unsigned(H) + 3) / 4;
  if (groups > 512) return {0, 0};
  const unsigned per_thread = groups > 64 ? 2 : 1;
  unsigned team = 32;
  while (team * per_thread < groups) team *= 2;
  return {per_thread, team};
}
}  // namespace head_loss

// Scratch floats head_loss_cuda needs: the four column sums per row chunk, then the row sums per
// block (one a row chunk in one pass, one per 32 rows in two; never fewer than chunks).
inline size_t head_loss_scratch_floats(int M, int H) {
  return 4 * size_t(colsum::chunks(size_t(M))) * size_t(H) + head_loss::kPartials * head_loss::pass1_blocks(M);
}

#if defined(GRPO_HAVE_CUDA)
// Throws std::invalid_argument for M < 1, H < 1 or a bad dropout spec.
void head_loss_cuda(const HeadLossArgs& a, cudaStream_t stream);
#endif

}  // namespace grpo
