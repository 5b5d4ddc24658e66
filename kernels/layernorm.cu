// Welford LayerNorm of gelu(h0) with the residual fused, forward and backward (contracts in
// layernorm.h). Structure after apex's layer_norm_cuda_kernel.cu: per-thread Welford over the
// row's elements, Chan merge across lanes (shuffles) and warps (shared memory), a second pass
// over the row (from L1/L2) for the output; dgamma/dbeta by the two-stage column reduction.
#include <algorithm>

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
                                                  float* __restrict__ mean, float* __restrict__ rstd, int M, int N,
                                                  bool vec) {
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
    for (unsigned k = 0; k < 4; ++k)
      if (k < n) welford_add(w, gelu(v[k]));
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
    store4(h1 + row * N + 4 * g, n, vec, v);
  }
}

template <int kRowThreads>
__global__ void layernorm_residual_backward_kernel(const float* __restrict__ dh1, const float* __restrict__ h0,
                                                   const float* __restrict__ gamma, const float* __restrict__ mean,
                                                   const float* __restrict__ rstd, float* __restrict__ dh0, int M,
                                                   int N, bool vec) {
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
  colsum::stage1<2>(f, M, f.N, rows_per_chunk, partial);
}

// Moves 8*M*N + 8*M bytes (h0 in, h1 out, mean and rstd out; the second read of the row comes
// from L1/L2; gamma and beta from cache).
void layernorm_residual_forward_cuda(const float* h0, const float* gamma, const float* beta, float* h1, float* mean,
                                     float* rstd, int M, int N, cudaStream_t stream) {
  check_layernorm_shape(M, N, "layernorm_residual_forward_cuda");
  if (M == 0) return;
  const bool vec = N % 4 == 0 && aligned16(h0) && aligned16(gamma) && aligned16(beta) && aligned16(h1);
  if (N <= kWarpRowMaxN)
    launch(layernorm_residual_forward_kernel<32>, dim3(ceil_div(size_t(M), kBlock / 32)), dim3(kBlock), 0, stream, h0,
           gamma, beta, h1, mean, rstd, M, N, vec);
  else
    launch(layernorm_residual_forward_kernel<kBlock>, dim3(unsigned(M)), dim3(kBlock), row_smem_bytes<kBlock>(), stream,
           h0, gamma, beta, h1, mean, rstd, M, N, vec);
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
      launch(layernorm_residual_backward_kernel<32>, dim3(ceil_div(size_t(M), kBlock / 32)), dim3(kBlock), 0, stream,
             dh1, h0, gamma, mean, rstd, dh0, M, N, vec);
    else
      launch(layernorm_residual_backward_kernel<kBlock>, dim3(unsigned(M)), dim3(kBlock), row_smem_bytes<kBlock>(),
             stream, dh1, h0, gamma, mean, rstd, dh0, M, N, vec);
  }
  const LayerNormParamGrad f{dh1, h0, mean, rstd, N, N % 4 == 0 && aligned16(dh1) && aligned16(h0)};
  launch(layernorm_param_grad_kernel, colsum::stage1_grid(M, N), colsum::stage1_block(), colsum::smem_bytes(2), stream,
         f, M, colsum::rows_per_chunk(size_t(M)), scratch);
  colsum::finish_cuda(scratch, colsum::chunks(size_t(M)), N, dgamma, dbeta, stream);
}

}  // namespace grpo
