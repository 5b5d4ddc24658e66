// Planted bug: a kernel launched overlapped (programmatic dependent launch) reads what the kernel
// before it writes before it waits for that kernel: on a GPU it may run beside it and read stale
// values. The emulator runs the two in turn, so only its check sees it.
// expect: access before wait_for_previous_kernel() to global memory the kernel before it wrote
#include "core/grid_dependency.cuh"
#include "core/launch.h"

__global__ void produce(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 2.f * i;
  grpo::release_next_kernel();
}

__global__ void consume(const float* a, const float* scale, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float s = *scale;              // a parameter no kernel here writes: fine before the wait
  const float v = i < n ? a[i] : 0.f;  // the bug: a is the kernel before's output
  grpo::wait_for_previous_kernel();
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
