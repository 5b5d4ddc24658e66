// Gradient norm, two deterministic stages (contract in kernels/grad_norm.h).
#include <stdexcept>

#include "core/grid_dependency.cuh"
#include "kernels/grad_norm.h"
#include "core/launch.h"
#include "core/vector_access.h"

namespace grpo {
namespace {

// Sum of a double over the block in a fixed order: a shuffle-down tree in each warp,
// then warp 0 adds the warp sums. Every thread of the block must call it; thread 0 gets the sum.
__device__ double block_sum_double(double x) {
  __shared__ double warp_sums[kGradNormThreads / 32];
  for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xFFFFFFFFu, x, off);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = x;
  __syncthreads();
  double total = 0.0;
  if (warp == 0) {
    total = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) total += __shfl_down_sync(0xFFFFFFFFu, total, off);
  }
  return total;
}

__global__ void __launch_bounds__(kGradNormThreads)
    grad_norm_partial_kernel(const float* __restrict__ grads, size_t n, double* __restrict__ partials) {
  follow_previous_kernel();
  const size_t n4 = n / 4;
  const float4* g4 = vector_at<const float4>(grads);
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  double acc = 0.0;
  for (size_t i = tid; i < n4; i += stride) {
    const float4 g = g4[i];
    acc += static_cast<double>(g.x) * g.x;
    acc += static_cast<double>(g.y) * g.y;
    acc += static_cast<double>(g.z) * g.z;
    acc += static_cast<double>(g.w) * g.w;
  }
  if (tid < n - 4 * n4) {  // the scalar tail, at most 3 elements
    const float g = grads[4 * n4 + tid];
    acc += static_cast<double>(g) * g;
  }
  const double sum = block_sum_double(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void __launch_bounds__(kGradNormThreads)
    grad_norm_finish_kernel(const double* __restrict__ partials, unsigned count, float max_norm, TrainScalars* s) {
  follow_previous_kernel();
  double acc = 0.0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  const double sum = block_sum_double(acc);
  if (threadIdx.x == 0) grad_norm_finish(sum, max_norm, s);
}

}  // namespace

void grad_norm_cuda(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch,
                    cudaStream_t stream) {
  if (reinterpret_cast<uintptr_t>(grads) % 16 != 0)
    throw std::invalid_argument("grad_norm_cuda: grads must be 16-byte aligned (float4 loads)");
  if (reinterpret_cast<uintptr_t>(scratch) % 8 != 0)
    throw std::invalid_argument("grad_norm_cuda: scratch must be 8-byte aligned (it holds doubles)");
  const unsigned blocks = grad_norm_blocks(n);
  double* partials = reinterpret_cast<double*>(scratch);
  launch_overlapped(grad_norm_partial_kernel, dim3(blocks), dim3(kGradNormThreads), 0, stream, grads, n, partials);
  launch_overlapped(grad_norm_finish_kernel, dim3(1), dim3(kGradNormThreads), 0, stream,
                    static_cast<const double*>(partials), blocks, max_norm, s);
}

}  // namespace grpo
