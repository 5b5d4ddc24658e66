// Layout of the deterministic two-stage column reductions (bias, gamma and beta gradients).
// Stage 1: block (column tile, row chunk) sums kTileCols columns over its chunk's rows into
// partial[chunk][col]; stage 2: one thread per column adds the chunks in order. The partition
// depends on the shape only (never on the device), so results are bitwise reproducible.
#pragma once
#include <algorithm>
#include <cstddef>

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo::colsum {

constexpr unsigned kTileCols = 128;  // 32 lanes x 4 columns (one float4 each)
constexpr unsigned kWarps = 8;       // rows in flight per block (256 threads)
// Caps scratch at kMaxChunks * N floats per accumulated quantity. 264 = 2 x 132: the loss pass's
// one-pass kernels (head_loss.cu, layernorm_input_onepass.cu) run a block a chunk, one or two an
// SM, so on a 132-SM H100 or H200 the presets' chunks (262 of them at 27,200 and 54,400 rows)
// fill two blocks an SM, or two waves of one, all but evenly; at 256 the blocks were 8 rows
// longer, and 12 to 21 SMs idled for a block's time. Still a function of the shape alone.
constexpr unsigned kMaxChunks = 264;

// Rows per chunk: at least 32, a multiple of kWarps, at most kMaxChunks chunks.
inline unsigned rows_per_chunk(size_t M) {
  size_t r = std::max<size_t>(32, (M + kMaxChunks - 1) / kMaxChunks);
  return unsigned((r + kWarps - 1) / kWarps * kWarps);
}
inline unsigned chunks(size_t M) {
  return unsigned(std::max<size_t>(1, (M + rows_per_chunk(M) - 1) / rows_per_chunk(M)));
}

#if defined(GRPO_HAVE_CUDA)
// Stage 2: out_a[col] = sum over chunks of partial[(a * chunks + chunk) * N + col], chunk in
// order, for a = 0 (out0) and, when out1 != nullptr, a = 1. Moves (naccs * chunks + naccs) * N * 4 bytes.
void finish_cuda(const float* partial, unsigned chunks, int N, float* out0, float* out1, cudaStream_t stream);
#endif

}  // namespace grpo::colsum
