// The fp32 -> bf16 cast (kernels/bf16.h): a thread per four elements.
#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/activations_vec.cuh"
#include "kernels/bf16.h"

namespace grpo {

__global__ void to_bf16_kernel(const float* __restrict__ x, Bf16* __restrict__ y, size_t n, bool vec) {
  follow_previous_kernel();
  const size_t i = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i >= n) return;
  const unsigned m = n - i < 4 ? unsigned(n - i) : 4u;
  float v[4];
  load4(x + i, m, vec, v);
  store4_bf16(y + i, m, vec, v);
}

void to_bf16_cuda(const float* x, Bf16* y, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const bool vec = aligned16(x) && aligned8(y);
  launch_overlapped(to_bf16_kernel, dim3(ceil_div((n + 3) / 4, 256)), dim3(256), 0, stream, x, y, n, vec);
}

}  // namespace grpo
