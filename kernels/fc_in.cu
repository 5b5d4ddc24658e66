// fc_in in its fixed order (contract in fc_in.h) and its transposed copy. K = D is 10 for the
// default game, so a product library has nothing to block over.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/activations_vec.cuh"
#include "kernels/fc_in.h"

namespace grpo {

namespace {

constexpr unsigned kThreads = 256;

// A block takes kFwdCols columns and kFwdRows rows. A thread owns four neighbouring columns and
// keeps their 4 D weights in registers for all its rows: per row it loads the observation (one
// address for the whole warp) and stores one float4. (A thread an element read W_in's rows, D
// floats apart, in every row: ten cache lines a warp load at D = 10.) Each sum is fc_in_dot's
// chain, so the bits are the same.
constexpr unsigned kFwdThreads = 128, kFwdCols = 4 * kFwdThreads, kFwdRows = 32;
constexpr int kFwdMaxD = 25;  // the largest observation a game has (1 + 3 Fmax)

template <int kMaxD>
__global__ void __launch_bounds__(kFwdThreads)
    fc_in_forward_kernel(const float* __restrict__ X, const float* __restrict__ W_in, float* __restrict__ h0, int M,
                         int N, int D, bool vec) {
  follow_previous_kernel();
  const unsigned c = blockIdx.x * kFwdCols + 4 * threadIdx.x;
  const unsigned n = c < unsigned(N) ? min(4u, unsigned(N) - c) : 0u;
  if (n == 0) return;  // no barriers here
  float w[4][kMaxD];
#pragma unroll
  for (unsigned k = 0; k < 4; ++k)
#pragma unroll
    for (int d = 0; d < kMaxD; ++d) w[k][d] = k < n && d < D ? W_in[size_t(c + k) * D + d] : 0.f;
  const size_t r0 = size_t(blockIdx.y) * kFwdRows, r1 = std::min(size_t(M), r0 + kFwdRows);
  for (size_t r = r0; r < r1; ++r) {
    const float* x = X + r * D;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int d = 0; d < kMaxD; ++d) {
      if (d >= D) break;
      fc_in_add4(x[d], make_float4(w[0][d], w[1][d], w[2][d], w[3][d]), acc);
    }
    store4(h0 + r * N + c, n, vec, acc);
  }
}

// Any D: a thread an element.
__global__ void fc_in_forward_any_kernel(const float* __restrict__ X, const float* __restrict__ W_in,
                                         float* __restrict__ h0, int M, int N, int D) {
  follow_previous_kernel();
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= size_t(M) * size_t(N)) return;
  const size_t r = i / size_t(N), c = i % size_t(N);
  h0[i] = fc_in_dot(X + r * D, W_in + c * D, D);
}

__global__ void fc_in_transpose_kernel(const float* __restrict__ W_in, float* __restrict__ W_inT, int N, int D,
                                       unsigned pitch) {
  follow_previous_kernel();
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= size_t(D) * pitch) return;
  const size_t d = i / pitch, c = i % pitch;
  W_inT[i] = c < size_t(N) ? W_in[c * D + d] : 0.f;
}

}  // namespace

// Moves 8*N*D bytes, padding aside.
void fc_in_transpose_cuda(const float* W_in, float* W_inT, int N, int D, cudaStream_t stream) {
  if (N < 1 || D < 1)
    throw std::invalid_argument("fc_in_transpose_cuda: needs N >= 1 and D >= 1, got N " + std::to_string(N) + ", D " +
                                std::to_string(D));
  const unsigned pitch = fc_in_t_pitch(N);
  launch_overlapped(fc_in_transpose_kernel, ceil_div(size_t(D) * pitch, kThreads), kThreads, 0, stream, W_in, W_inT, N,
                    D, pitch);
}

// Moves 4*M*N bytes (h0 out) and 4*M*D (X in); W_in once a row tile, from L2.
void fc_in_forward_cuda(const float* X, const float* W_in, float* h0, int M, int N, int D, cudaStream_t stream) {
  if (M < 0 || N < 1 || D < 1)
    throw std::invalid_argument("fc_in_forward_cuda: needs M >= 0, N >= 1 and D >= 1, got M " + std::to_string(M) +
                                ", N " + std::to_string(N) + ", D " + std::to_string(D));
  if (M == 0) return;
  if (D > kFwdMaxD) {
    launch_overlapped(fc_in_forward_any_kernel, ceil_div(size_t(M) * size_t(N), kThreads), kThreads, 0, stream, X, W_in,
                      h0, M, N, D);
    return;
  }
  const dim3 grid(ceil_div(size_t(N), kFwdCols), ceil_div(size_t(M), kFwdRows));
  const bool vec = N % 4 == 0 && aligned16(h0);
  launch_overlapped(D <= 10 ? fc_in_forward_kernel<10> : fc_in_forward_kernel<kFwdMaxD>, grid, dim3(kFwdThreads), 0,
                    stream, X, W_in, h0, M, N, D, vec);
}

}  // namespace grpo
