// Planted bug: a kernel on stream s1 reads what a kernel on stream s0 writes, with no event
// between the streams (the cudaStreamWaitEvent is missing). On a GPU the two may run in either
// order or at once; the emulator's eager queues run them in a drawn order, and its memory checks
// report the read whatever that order: the write's node is not ordered before the read's.
// expect: data race on global memory between streams
#include "core/launch.h"

__global__ void produce(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 2.f * i;
}

__global__ void consume(const float* a, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 1.f;
}

int main() {
  const int n = 128;
  float *a, *out;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaStream_t s0, s1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, n);
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s1, a, out, n);
  cudaDeviceSynchronize();
  float h[n];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 2.f * (n - 1) + 1.f ? 0 : 1;
}
