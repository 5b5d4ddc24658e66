// Control for overlapped_read_before_wait.cu: the overlapped kernel reads its parameter before it
// waits for the kernel before it, and that kernel's output only after.
#include "core/grid_dependency.cuh"
#include "core/launch.h"

__global__ void produce(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 2.f * i;
  grpo::release_next_kernel();
}

__global__ void consume(const float* a, const float* scale, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float s = *scale;  // a parameter no kernel here writes: fine before the wait
  grpo::wait_for_previous_kernel();
  const float v = i < n ? a[i] : 0.f;
  if (i < n) out[i] = v * s;
}

int main() {
  const int n = 256;
  float *a, *scale, *out;
  const float one = 1.f;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&scale, sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemcpy(scale, &one, sizeof one, cudaMemcpyHostToDevice);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, nullptr, a, n);
  grpo::launch_overlapped(consume, dim3(n / 64), dim3(64), 0, nullptr, a, scale, out, n);
  float h[n];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 2.f * (n - 1) ? 0 : 1;
}
