// Control for shfl_divergent.cu: the 16 lanes that take the branch name exactly themselves.
#include <cstdio>

__global__ void broadcast(float* out) {
  float v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_sync(0x0000ffffu, v, 0);
  out[threadIdx.x] = v;
}

int main() {
  float* d;
  cudaMalloc(&d, 32 * sizeof(float));
  broadcast<<<1, 32>>>(d);
  float h[32];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 32; ++i)
    if (h[i] != (i < 16 ? 0.f : float(i))) return 1;
  cudaFree(d);
  return 0;
}
