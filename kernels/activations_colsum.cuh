// Stage 1 of the two-stage column reduction (layout in activations_colsum.h). Include from .cu only.
//
// Block (blockIdx.x = column tile, blockIdx.y = row chunk), 256 threads = 8 warps. Warp w takes
// rows chunk_start + w, + 8, ...; lane l owns columns tile*128 + 4l .. 4l+3, so each warp reads
// one row's 512 contiguous bytes per tensor. F(row, col0, n, acc) handles n <= 4 columns of a row
// starting at col0 (and may write an elementwise output on the way) and adds NACC values per
// column to acc. The 8 warps' sums meet in shared memory, added in warp order (deterministic).
//
// stage1_rows is the same reduction for kernels that stream: a warp loads R rows before it uses
// the first, so R rows' bytes are in flight instead of one (a warp's loop over rows otherwise
// waits a full DRAM round trip a row). Each column's sum still takes the rows in the same order.
#pragma once
#include <algorithm>
#include <cstddef>

#include "kernels/activations_colsum.h"
#include "core/launch.h"
#include "core/vector_access.h"

namespace grpo::colsum {

constexpr size_t smem_bytes(int naccs) { return size_t(naccs) * kWarps * kTileCols * sizeof(float); }

// Stage 2 for one column: partial[c * N] over the chunks c in order (partial points at the
// column's entry of chunk 0 of one quantity).
__device__ __forceinline__ float finish_column(const float* partial, unsigned chunks, int N) {
  float t = 0.f;
  for (unsigned c = 0; c < chunks; ++c) t += partial[size_t(c) * N];
  return t;
}

// The 8 warps' sums of each column, added in warp order, to partial[(a * chunks + chunk) * N + col].
template <int NACC>
__device__ __forceinline__ void write_partials(const float (&acc)[NACC][4], int N, float* partial) {
  GRPO_DYNAMIC_SHARED(float, s);  // [NACC][kWarps][kTileCols]
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // float4 stores: each quarter warp covers all 32 banks once, no conflicts.
#pragma unroll
  for (int a = 0; a < NACC; ++a)
    *vector_at<float4>(s + (a * kWarps + warp) * kTileCols + 4 * lane) =
        make_float4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
  __syncthreads();
  const unsigned col = blockIdx.x * kTileCols + threadIdx.x;
  if (threadIdx.x < kTileCols && col < unsigned(N)) {
#pragma unroll
    for (int a = 0; a < NACC; ++a) {
      float t = 0.f;
      for (unsigned w = 0; w < kWarps; ++w) t += s[(a * kWarps + w) * kTileCols + threadIdx.x];
      partial[(size_t(a) * gridDim.y + blockIdx.y) * N + col] = t;
    }
  }
}

// F as above, split in two: f.load(row, col0, n) returns the row's inputs (an F::Row, loads
// only) and f.use(row, col0, n, const F::Row&, acc) does the rest. Rows past the chunk's end are
// neither loaded nor used.
template <int NACC, unsigned R, class F>
__device__ __forceinline__ void stage1_rows(const F& f, int M, int N, unsigned rows_per_chunk, float* partial) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned col0 = blockIdx.x * kTileCols + 4 * lane;
  const size_t r0 = size_t(blockIdx.y) * rows_per_chunk;
  const size_t r1 = std::min(size_t(M), r0 + rows_per_chunk);
  float acc[NACC][4];
#pragma unroll
  for (int a = 0; a < NACC; ++a)
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[a][k] = 0.f;
  if (col0 < unsigned(N)) {
    const unsigned n = std::min(4u, unsigned(N) - col0);
    for (size_t r = r0 + warp; r < r1; r += R * kWarps) {
      typename F::Row rows[R] = {};
#pragma unroll
      for (unsigned i = 0; i < R; ++i)
        if (r + i * kWarps < r1) rows[i] = f.load(r + i * kWarps, col0, n);
#pragma unroll
      for (unsigned i = 0; i < R; ++i)
        if (r + i * kWarps < r1) f.use(r + i * kWarps, col0, n, rows[i], acc);
    }
  }
  write_partials<NACC>(acc, N, partial);
}

// F(row, col0, n, acc) in one piece: stage1_rows with a row's loads and use together, one row a
// warp at a time.
template <int NACC, class F>
struct WholeRows {
  const F& f;
  struct Row {};
  __device__ __forceinline__ Row load(size_t, unsigned, unsigned) const { return {}; }
  __device__ __forceinline__ void use(size_t row, unsigned col0, unsigned n, const Row&, float (&acc)[NACC][4]) const {
    f(row, col0, n, acc);
  }
};
template <int NACC, class F>
__device__ __forceinline__ void stage1(const F& f, int M, int N, unsigned rows_per_chunk, float* partial) {
  stage1_rows<NACC, 1>(WholeRows<NACC, F>{f}, M, N, rows_per_chunk, partial);
}

inline dim3 stage1_grid(int M, int N) { return dim3(ceil_div(size_t(N), kTileCols), chunks(size_t(M))); }
inline dim3 stage1_block() { return dim3(kWarps * 32); }

}  // namespace grpo::colsum
