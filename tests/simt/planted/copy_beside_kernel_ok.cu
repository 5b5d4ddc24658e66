// Control: the planted copy_beside_kernel.cu with the copy's stream waiting for an event recorded
// after the kernel; and a memset on the kernel's own stream after it. No report.
#include <vector>

#include "core/launch.h"

__global__ void consume(const float* a, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 1.f;
}

int main() {
  const int n = 128;
  float *a, *out, *next;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&next, n * sizeof(float));
  std::vector<float> h(n, 3.f);
  cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(next, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  cudaStream_t s0, s1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEvent_t read;
  cudaEventCreateWithFlags(&read, cudaEventDisableTiming);
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s0, a, out, n);
  cudaEventRecord(read, s0);
  cudaStreamWaitEvent(s1, read, 0);
  cudaMemcpyAsync(a, next, n * sizeof(float), cudaMemcpyDeviceToDevice, s1);
  cudaMemsetAsync(next, 0, n * sizeof(float), s1);
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s1, next, out, n);
  cudaStreamSynchronize(s1);
  cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h[n - 1] == 1.f ? 0 : 1;
}
