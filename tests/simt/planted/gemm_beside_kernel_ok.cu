// Control for gemm_beside_kernel.cu: s1 waits for an event recorded after the kernel, so the
// product reads the matrix the kernel wrote, under every drawn order.
#include <cublas_v2.h>

#include <vector>

#include "core/launch.h"

__global__ void fill(float* a, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = v;
}

int main() {
  const int m = 8, n = 8, k = 8;
  float *a, *b, *c;
  cudaMalloc(&a, m * k * sizeof(float));
  cudaMalloc(&b, k * n * sizeof(float));
  cudaMalloc(&c, m * n * sizeof(float));
  std::vector<float> ones(k * n, 1.f);
  cudaMemcpy(b, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();  // a pageable upload may still be on its way when cudaMemcpy returns
  cudaStream_t s0, s1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetStream(h, s1);
  const float one = 1.f, zero = 0.f;
  grpo::launch(fill, dim3(1), dim3(64), 0, s0, a, m * k, 2.f);
  cudaEvent_t filled;
  cudaEventCreateWithFlags(&filled, cudaEventDisableTiming);
  cudaEventRecord(filled, s0);
  cudaStreamWaitEvent(s1, filled, 0);
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m);
  cudaDeviceSynchronize();
  std::vector<float> out(m * n);
  cudaMemcpy(out.data(), c, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cublasDestroy(h);
  return out[0] == 2.f * k ? 0 : 1;
}
