// Control for vector_misaligned.cu: the same loads from 16-byte boundaries.
#include "core/vector_access.h"

__global__ void copy4(const float* x, float* y) {
  const float4 v = *grpo::vector_at<const float4>(x + 4 + 4 * threadIdx.x);
  y[4 * threadIdx.x] = v.x + v.y + v.z + v.w;
}

int main() {
  float *x, *y;
  cudaMalloc(&x, 256 * sizeof(float));
  cudaMalloc(&y, 256 * sizeof(float));
  cudaMemset(x, 0, 256 * sizeof(float));
  copy4<<<1, 32>>>(x, y);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
