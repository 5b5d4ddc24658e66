// fc_in in its fixed order (contract in fc_in.h): a thread an element. K = D is 10 for the
// default game, so a product library has nothing to block over; W_in (N x D floats) stays in L1.
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "kernels/fc_in.h"

namespace grpo {

namespace {

constexpr unsigned kThreads = 256;

__global__ void fc_in_forward_kernel(const float* __restrict__ X, const float* __restrict__ W_in,
                                     float* __restrict__ h0, int M, int N, int D) {
  const size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= size_t(M) * size_t(N)) return;
  const size_t r = i / size_t(N), c = i % size_t(N);
  h0[i] = fc_in_dot(X + r * D, W_in + c * D, D);
}

__global__ void fc_in_transpose_kernel(const float* __restrict__ W_in, float* __restrict__ W_inT, int N, int D,
                                       unsigned pitch) {
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
  launch(fc_in_transpose_kernel, ceil_div(size_t(D) * pitch, kThreads), kThreads, 0, stream, W_in, W_inT, N, D, pitch);
}

// Moves 4*M*N bytes (h0 out) and 4*M*D (X in); W_in from L1/L2.
void fc_in_forward_cuda(const float* X, const float* W_in, float* h0, int M, int N, int D, cudaStream_t stream) {
  if (M < 0 || N < 1 || D < 1)
    throw std::invalid_argument("fc_in_forward_cuda: needs M >= 0, N >= 1 and D >= 1, got M " + std::to_string(M) +
                                ", N " + std::to_string(N) + ", D " + std::to_string(D));
  if (M == 0) return;
  launch(fc_in_forward_kernel, ceil_div(size_t(M) * size_t(N), kThreads), kThreads, 0, stream, X, W_in, h0, M, N, D);
}

}  // namespace grpo
