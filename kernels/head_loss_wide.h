// Internal to kernels/head_loss.cu: the two-pass head for layers wider than its one-pass kernel
// takes (kernels/head_loss_wide.cu).
#pragma once
#include "kernels/head_loss.h"

namespace grpo {

#if defined(GRPO_HAVE_CUDA)
// Writes the logits, dlogits and da1 (or its bf16 copy), pass 2's four column sums per row chunk
// to col_partials ([4][chunks][H], colsum's layout) and pass 1's four row sums per block to
// row_partials; returns the number of those blocks. `vec`: a1, b1, W_out and da1 take float4s.
unsigned head_loss_wide_cuda(const HeadLossArgs& a, bool vec, float* col_partials, float* row_partials,
                             cudaStream_t stream);
#endif

}  // namespace grpo
