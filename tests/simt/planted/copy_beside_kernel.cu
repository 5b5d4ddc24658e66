// Planted bug: an asynchronous copy on stream s1 overwrites the buffer a kernel on stream s0 is
// reading, with no event between the streams. On a GPU the copy engine and the kernel run at
// once; the emulator runs them in a drawn order, and its memory checks report whichever comes
// second: the copy's writes join the checks like a kernel's.
// expect: data race on global memory between streams
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
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s0, a, out, n);
  cudaMemcpyAsync(a, next, n * sizeof(float), cudaMemcpyDeviceToDevice, s1);  // should wait for consume
  cudaDeviceSynchronize();
  cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h[n - 1] == 4.f ? 0 : 1;
}
