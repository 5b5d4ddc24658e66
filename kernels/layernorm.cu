// Welford LayerNorm of gelu(h0) with the residual fused, forward and backward (contracts in
// layernorm.h). Structure after apex's layer_norm_cuda_kernel.cu: per-thread Welford over the
// row's elements, Chan merge across lanes (shuffles) and warps (shared memory), a second pass
// over the row (from L1/L2) for the output; dgamma/dbeta by the two-stage column reduction.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/gelu.h"
#include "core/launch.h"
#include "kernels/layernorm.h"
#include "kernels/welford.cuh"

namespace grpo {

namespace {

using namespace row_welford_ops;

constexpr unsigned kFull = 0xFFFFFFFFu;
constexpr int kBlock = 256;         // threads per block in both layouts
constexpr int kWarpRowMaxN = 1024;  // up to here a warp per row (<= 8 float4 per lane)

// Two plain sums over the row, identical in every thread of the row (same pattern).
template <int kRowThreads>
__device__ __forceinline__ void row_sum2(float& a, float& b) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_down_sync(kFull, a, o);
    b += __shfl_down_sync(kFull, b, o);
  }
  if constexpr (kRowThreads == 32) {
    a = __shfl_sync(kFull, a, 0);
    b = __shfl_sync(kFull, b, 0);
  } else {
    GRPO_DYNAMIC_SHARED(float, s);  // [2][kRowThreads / 32]
    constexpr int kWarps = kRowThreads / 32;
    const unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) s[warp] = a, s[kWarps + warp] = b;
    __syncthreads();
    a = s[0], b = s[kWarps];
    for (int i = 1; i < kWarps; ++i) a += s[i], b += s[kWarps + i];
  }
}

template <int kRowThreads>
constexpr size_t row_smem_bytes() {
  return kRowThreads == 32 ? 0 : 3 * (kRowThreads / 32) * sizeof(float);
}

}  // namespace

// kRowThreads = 32: a warp per row, 8 rows per block. kRowThreads = 256: a block per row.
template <int kRowThreads>
__global__ void layernorm_residual_forward_kernel(const float* __restrict__ h0, const float* __restrict__ gamma,
                                                  const float* __restrict__ beta, float* __restrict__ h1,
                                                  Bf16* __restrict__ h1_bf16, float* __restrict__ mean,
                                                  float* __restrict__ rstd, int M, int N, bool vec) {
  follow_previous_kernel();
  const unsigned tid = threadIdx.x % kRowThreads;
  const size_t row = size_t(blockIdx.x) * (kBlock / kRowThreads) + threadIdx.x / kRowThreads;
  if (row >= size_t(M)) return;  // whole warps (warp mode) or never (block mode: grid = M)
  const float* x = h0 + row * N;
  const unsigned groups = (unsigned(N) + 3) / 4;
  Welford w{0.f, 0.f, 0.f};
  for (unsigned g = tid; g < groups; g += kRowThreads) {
    const unsigned n = std::min(4u, unsigned(N) - 4 * g);
    float v[4];
    load4(x + 4 * g, n, vec, v);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) v[k] = gelu(v[k]);
    w = welford_append(w, welford_group4(v, n));
  }
  GRPO_DYNAMIC_SHARED(float, welford_smem);  // [3][kRowThreads / 32] in block mode
  w = row_welford<kRowThreads>(w, welford_smem);
  const float mu = w.mean, rs = rsqrtf(w.m2 / float(N) + kLayerNormEps);
  if (tid == 0) mean[row] = mu, rstd[row] = rs;
  for (unsigned g = tid; g < groups; g += kRowThreads) {
    const unsigned n = std::min(4u, unsigned(N) - 4 * g);
    float v[4], ga[4], be[4];
    load4(x + 4 * g, n, vec, v);
    load4(gamma + 4 * g, n, vec, ga);
    load4(beta + 4 * g, n, vec, be);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) v[k] = v[k] + (gelu(v[k]) - mu) * rs * ga[k] + be[k];
    if (h1_bf16)
      store4_bf16(h1_bf16 + row * N + 4 * g, n, vec, v);
    else
      store4(h1 + row * N + 4 * g, n, vec, v);
  }
}

// kStatsOnly: instead of dh0, writes the row's two means (of dxhat and of dxhat * xhat) to
// dh0[2 row], dh0[2 row + 1], for layernorm_input_backward_cuda's column pass.
template <int kRowThreads, bool kStatsOnly = false>
__global__ void layernorm_residual_backward_kernel(const float* __restrict__ dh1, const float* __restrict__ h0,
                                                   const float* __restrict__ gamma, const float* __restrict__ mean,
                                                   const float* __restrict__ rstd, float* __restrict__ dh0, int M,
                                                   int N, bool vec) {
  follow_previous_kernel();
  const unsigned tid = threadIdx.x % kRowThreads;
  const size_t row = size_t(blockIdx.x) * (kBlock / kRowThreads) + threadIdx.x / kRowThreads;
  if (row >= size_t(M)) return;
  const size_t o = row * N;
  const unsigned groups = (unsigned(N) + 3) / 4;
  const float mu = mean[row], rs = rstd[row];
  float s1 = 0.f, s2 = 0.f;  // sums of dxhat and dxhat * xhat
  for (unsigned g = tid; g < groups; g += kRowThreads) {
    const unsigned n = std::min(4u, unsigned(N) - 4 * g);
    float dy[4], x[4], ga[4];
    load4(dh1 + o + 4 * g, n, vec, dy);
    load4(h0 + o + 4 * g, n, vec, x);
    load4(gamma + 4 * g, n, vec, ga);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      const float xhat = (gelu(x[k]) - mu) * rs, dxhat = dy[k] * ga[k];  // 0 beyond n: dy = 0
      s1 += dxhat;
      s2 += dxhat * xhat;
    }
  }
  row_sum2<kRowThreads>(s1, s2);
  const float a1 = s1 / float(N), a2 = s2 / float(N);
  if constexpr (kStatsOnly) {
    if (tid == 0) dh0[2 * row] = a1, dh0[2 * row + 1] = a2;
  } else {
    for (unsigned g = tid; g < groups; g += kRowThreads) {
      const unsigned n = std::min(4u, unsigned(N) - 4 * g);
      float dy[4], x[4], ga[4];
      load4(dh1 + o + 4 * g, n, vec, dy);
      load4(h0 + o + 4 * g, n, vec, x);
      load4(gamma + 4 * g, n, vec, ga);
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) {
        float dg;
        const float xhat = (gelu_and_grad(x[k], dg) - mu) * rs;
        dy[k] = dy[k] + dg * (rs * (dy[k] * ga[k] - a1 - xhat * a2));
      }
      store4(dh0 + o + 4 * g, n, vec, dy);
    }
  }
}

// dgamma += dh1 * xhat, dbeta += dh1 for 4 columns of one row.
struct LayerNormParamGrad {
  const float* dh1;
  const float* h0;
  const float* mean;
  const float* rstd;
  int N;
  bool vec;
  __device__ __forceinline__ void operator()(size_t row, unsigned col0, unsigned n, float (&acc)[2][4]) const {
    float dy[4], x[4];
    load4(dh1 + row * N + col0, n, vec, dy);
    load4(h0 + row * N + col0, n, vec, x);
    const float mu = mean[row], rs = rstd[row];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      acc[0][k] += dy[k] * ((gelu(x[k]) - mu) * rs);  // dy = 0 beyond n
      acc[1][k] += dy[k];
    }
  }
};

__global__ void layernorm_param_grad_kernel(LayerNormParamGrad f, int M, unsigned rows_per_chunk, float* partial) {
  follow_previous_kernel();
  colsum::stage1<2>(f, M, f.N, rows_per_chunk, partial);
}

namespace {

constexpr int kInTile = 32;  // columns of a block in the input backward's column pass: one per lane
constexpr int kInWarps = kBlock / 32;
// The column pass is compiled for exactly the default game's observation width (1 + 3 Fmax = 10),
// and for any width up to 10 or 25. Its loop over d is unrolled; with a runtime D its d < D
// tests compile to predicated instructions that issue whether or not they run, and to the
// comparisons that set them (at D = 10 the kernel for 25 issued ~160 instructions an element,
// the one for exactly 10 ~80): the pass is bound by issue, not by HBM, at these counts.
constexpr int kInSmallD = 10;
// Rows a warp of the column pass loads before it uses the first: its loads are 128 bytes a row
// and tensor, so one row at a time leaves HBM mostly idle.
constexpr unsigned kInRows = 4;

// The input backward's column pass. Block (column tile of 32, row chunk); lane l owns column
// tile * 32 + l, warp w the chunk's rows w, w + 8, ..., kInRows of them at a time. It recomputes
// dh0 from the row's two means (stats, from the stats-only row kernel) and adds dh1 xhat, dh1 and
// dh0 X[row, d] (d < D) to its column's 2 + D sums, rows in order; the 8 warps' sums meet in
// shared memory, added in warp order, into partial[(q * chunks + chunk) * N + col].
template <int kMaxD, bool kExactD>
__global__ void __launch_bounds__(kBlock, 3)
    layernorm_input_grad_kernel(const float* __restrict__ dh1, const float* __restrict__ h0,
                                const float* __restrict__ X, const float* __restrict__ gamma,
                                const float* __restrict__ mean, const float* __restrict__ rstd,
                                const float* __restrict__ stats, int M, int N, int D, unsigned rows_per_chunk,
                                float* __restrict__ partial) {
  follow_previous_kernel();
  constexpr int kInSums = 2 + kMaxD;
  __shared__ float sums[kInWarps][kInSums][kInTile];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned col = blockIdx.x * kInTile + lane;
  const bool live = col < unsigned(N);
  const float ga = live ? gamma[col] : 0.f;
  float acc[kInSums];
#pragma unroll
  for (int q = 0; q < kInSums; ++q) acc[q] = 0.f;
  const size_t r0 = size_t(blockIdx.y) * rows_per_chunk, r1 = std::min(size_t(M), r0 + rows_per_chunk);
  for (size_t r = r0 + warp; live && r < r1; r += kInRows * kInWarps) {
    float dy[kInRows], x[kInRows], mu[kInRows], rs[kInRows], a1[kInRows], a2[kInRows];
#pragma unroll
    for (unsigned i = 0; i < kInRows; ++i) {
      const size_t ri = r + i * kInWarps;
      if (ri >= r1) break;
      dy[i] = dh1[ri * N + col], x[i] = h0[ri * N + col], mu[i] = mean[ri], rs[i] = rstd[ri];
      a1[i] = stats[2 * ri], a2[i] = stats[2 * ri + 1];
    }
#pragma unroll
    for (unsigned i = 0; i < kInRows; ++i) {
      const size_t ri = r + i * kInWarps;
      if (ri >= r1) break;
      float dg;
      const float xhat = (gelu_and_grad(x[i], dg) - mu[i]) * rs[i];
      const float d0 = dy[i] + dg * (rs[i] * (dy[i] * ga - a1[i] - xhat * a2[i]));  // the row kernel's dh0, to the bit
      acc[0] += dy[i] * xhat;
      acc[1] += dy[i];
      const float* xr = X + ri * D;
#pragma unroll
      for (int d = 0; d < kMaxD; ++d)
        if (kExactD || d < D) acc[2 + d] += d0 * xr[d];
    }
  }
#pragma unroll
  for (int q = 0; q < kInSums; ++q)
    if (q < 2 + D) sums[warp][q][lane] = acc[q];
  __syncthreads();
  for (unsigned i = threadIdx.x; i < unsigned(2 + D) * kInTile; i += kBlock) {
    const unsigned q = i / kInTile, c = i % kInTile, n = blockIdx.x * kInTile + c;
    if (n >= unsigned(N)) continue;
    float t = 0.f;
    for (unsigned w = 0; w < kInWarps; ++w) t += sums[w][q][c];
    partial[(size_t(q) * gridDim.y + blockIdx.y) * N + n] = t;
  }
}

// Stage 2: one thread per (quantity, column), the chunks added in order: dgamma, dbeta, then
// dW_in[n, d] for quantity 2 + d.
__global__ void layernorm_input_finish_kernel(const float* __restrict__ partial, unsigned chunks, int N, int D,
                                              float* __restrict__ dgamma, float* __restrict__ dbeta,
                                              float* __restrict__ dW_in) {
  follow_previous_kernel();
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(2 + D) * N) return;
  const unsigned q = unsigned(i / N), n = unsigned(i % N);
  float t = 0.f;
  for (unsigned c = 0; c < chunks; ++c) t += partial[(size_t(q) * chunks + c) * N + n];
  if (q == 0)
    dgamma[n] = t;
  else if (q == 1)
    dbeta[n] = t;
  else
    dW_in[size_t(n) * D + (q - 2)] = t;
}

}  // namespace

// Moves 8*M*N + 8*M bytes (h0 in, h1 out, mean and rstd out; the second read of the row comes
// from L1/L2; gamma and beta from cache); 6*M*N + 8*M when h1 goes out as bf16.
void layernorm_residual_forward_cuda(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N, cudaStream_t stream, Bf16* h1_bf16) {
  check_layernorm_shape(M, N, "layernorm_residual_forward_cuda");
  if (M == 0) return;
  const bool vec = N % 4 == 0 && aligned16(h0) && aligned16(gamma) && aligned16(beta) && aligned16(h1) &&
                   (h1_bf16 == nullptr || aligned8(h1_bf16));
  if (N <= kWarpRowMaxN)
    launch_overlapped(layernorm_residual_forward_kernel<32>, dim3(ceil_div(size_t(M), kBlock / 32)), dim3(kBlock), 0,
                      stream, h0, gamma, beta, h1, h1_bf16, mean, rstd, M, N, vec);
  else
    launch_overlapped(layernorm_residual_forward_kernel<kBlock>, dim3(unsigned(M)), dim3(kBlock),
                      row_smem_bytes<kBlock>(), stream, h0, gamma, beta, h1, h1_bf16, mean, rstd, M, N, vec);
}

// Moves 12*M*N + 8*M bytes in the row kernel (dh1 and h0 in, dh0 out; second pass from L1/L2),
// then 8*M*N + 8*M again in the dgamma/dbeta kernel plus 16 * chunks * N for the partial sums
// (chunks <= 256).
void layernorm_residual_backward_cuda(const float* dh1, const float* h0, const float* gamma, const float* mean,
                                      const float* rstd, float* dh0, float* dgamma, float* dbeta, int M, int N,
                                      float* scratch, cudaStream_t stream) {
  check_layernorm_shape(M, N, "layernorm_residual_backward_cuda");
  const bool vec = N % 4 == 0 && aligned16(dh1) && aligned16(h0) && aligned16(gamma) && aligned16(dh0);
  if (M > 0) {
    if (N <= kWarpRowMaxN)
      launch_overlapped(layernorm_residual_backward_kernel<32>, dim3(ceil_div(size_t(M), kBlock / 32)), dim3(kBlock), 0,
                        stream, dh1, h0, gamma, mean, rstd, dh0, M, N, vec);
    else
      launch_overlapped(layernorm_residual_backward_kernel<kBlock>, dim3(unsigned(M)), dim3(kBlock),
                        row_smem_bytes<kBlock>(), stream, dh1, h0, gamma, mean, rstd, dh0, M, N, vec);
  }
  const LayerNormParamGrad f{dh1, h0, mean, rstd, N, N % 4 == 0 && aligned16(dh1) && aligned16(h0)};
  launch_overlapped(layernorm_param_grad_kernel, colsum::stage1_grid(M, N), colsum::stage1_block(),
                    colsum::smem_bytes(2), stream, f, M, colsum::rows_per_chunk(size_t(M)), scratch);
  colsum::finish_cuda(scratch, colsum::chunks(size_t(M)), N, dgamma, dbeta, stream);
}

namespace {

// The input backward's two passes for shapes the one pass does not take: the stats-only row
// kernel, then the column pass, both reading h0 and dh1.
void layernorm_input_two_passes(const float* dh1, const float* h0, const float* X, const float* gamma,
                                const float* mean, const float* rstd, int M, int N, int D, unsigned chunks,
                                float* partial, float* stats, cudaStream_t stream) {
  if (M > 0) {
    const bool vec = N % 4 == 0 && aligned16(dh1) && aligned16(h0) && aligned16(gamma);
    if (N <= kWarpRowMaxN)
      launch_overlapped(layernorm_residual_backward_kernel<32, true>, dim3(ceil_div(size_t(M), kBlock / 32)),
                        dim3(kBlock), 0, stream, dh1, h0, gamma, mean, rstd, stats, M, N, vec);
    else
      launch_overlapped(layernorm_residual_backward_kernel<kBlock, true>, dim3(unsigned(M)), dim3(kBlock),
                        row_smem_bytes<kBlock>(), stream, dh1, h0, gamma, mean, rstd, stats, M, N, vec);
  }
  launch_overlapped(D == kInSmallD  ? layernorm_input_grad_kernel<kInSmallD, true>
                    : D < kInSmallD ? layernorm_input_grad_kernel<kInSmallD, false>
                                    : layernorm_input_grad_kernel<kLayerNormMaxObs, false>,
                    dim3(ceil_div(size_t(N), kInTile), chunks), dim3(kBlock), 0, stream, dh1, h0, X, gamma, mean, rstd,
                    static_cast<const float*>(stats), M, N, D, colsum::rows_per_chunk(size_t(M)), partial);
}

}  // namespace

// One pass: 4*M*N bytes (dh1 in) plus 4*M*(D + 2) and 8 * (2 + D) * chunks * N for the partial
// sums (chunks <= 256). Two passes: 8*M*N + 16*M bytes in the stats-only row kernel (dh1 and h0
// in, two means out), then 8*M*N + 4*M*D + 16*M in the column pass plus the partial sums. No
// [M, N] array is written either way.
void layernorm_input_backward_cuda(const float* dh1, const float* h0, const float* X, const float* W_in,
                                   const float* gamma, const float* mean, const float* rstd, float* dgamma,
                                   float* dbeta, float* dW_in, int M, int N, int D, float* scratch,
                                   cudaStream_t stream) {
  check_layernorm_shape(M, N, "layernorm_input_backward_cuda");
  if (D < 1 || D > kLayerNormMaxObs)
    throw std::invalid_argument("layernorm_input_backward_cuda: D must be in [1, " + std::to_string(kLayerNormMaxObs) +
                                "], got " + std::to_string(D));
  const unsigned chunks = colsum::chunks(size_t(M));
  float* partial = scratch;
  float* stats = scratch + size_t(2 + D) * chunks * size_t(N);
  if (layernorm_onepass::fits_device(N, D))
    layernorm_onepass::partial_sums_cuda(dh1, X, W_in, gamma, mean, rstd, M, N, D, partial, stream);
  else
    layernorm_input_two_passes(dh1, h0, X, gamma, mean, rstd, M, N, D, chunks, partial, stats, stream);
  launch_overlapped(layernorm_input_finish_kernel, dim3(ceil_div(size_t(2 + D) * N, kBlock)), dim3(kBlock), 0, stream,
                    static_cast<const float*>(partial), chunks, N, D, dgamma, dbeta, dW_in);
}

}  // namespace grpo
