// The LayerNorm input backward in one pass over dh1, with h0 recomputed (issue 16 item 2; the
// contract is layernorm_input_backward_cuda's, layernorm.h). Internal to layernorm.cu, which
// picks it when layernorm_input_backward_recomputes_h0(N, D) and adds its partial sums with
// the same finishing launch as the two-pass path.
#pragma once
#include <cstddef>

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo::layernorm_onepass {

constexpr int kThreads = 512;  // a block: one team of 512 threads at N 2048, four of 128 at 512
constexpr int kMaxD = 10;      // observation widths it is compiled for (the default game's is 10)
constexpr int kMaxN = 4 * kThreads;

// Threads a row: the least power of two from 32 that gives each a group of four columns.
inline unsigned team(int N) {
  unsigned t = 32;
  while (4 * t < unsigned(N)) t *= 2;
  return t;
}

#if defined(GRPO_HAVE_CUDA)
// Writes partial[(q * chunks + chunk) * N + col] for q < 2 + D (dgamma, dbeta, then dW_in's
// column d at q = 2 + d), chunks = colsum::chunks(M), as the two-pass column pass does.
// h0_out: nullptr, or (for tests) [M, N] where the kernel also writes the h0 it recomputed.
// Throws std::invalid_argument unless 1 <= N <= kMaxN and 1 <= D <= kMaxD.
void partial_sums_cuda(const float* dh1, const float* X, const float* W_in, const float* gamma, const float* mean,
                       const float* rstd, int M, int N, int D, float* partial, cudaStream_t stream,
                       float* h0_out = nullptr);
// Whether the CUDA op takes this pass at N and D: a shape it is compiled for
// (layernorm_input_backward_recomputes_h0's, layernorm.h) whose block the current device's shared
// memory holds: W_in at its columns, up to ~92 KB a block at N 2048 and D 10 with the static part
// (sm_90 offers 227 KB, sm_86 and sm_89 99 KB, older GPUs 48-64 KB). Elsewhere the two passes run.
bool fits_device(int N, int D);
#endif

}  // namespace grpo::layernorm_onepass
