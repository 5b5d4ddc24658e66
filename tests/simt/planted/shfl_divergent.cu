// Planted bug: a full-mask shuffle inside a branch only 16 lanes take (synccheck on a GPU).
// expect: exited
#include <cstdio>

__global__ void broadcast(float* out) {
  float v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 0);
  out[threadIdx.x] = v;
}

int main() {
  float* d;
  cudaMalloc(&d, 32 * sizeof(float));
  broadcast<<<1, 32>>>(d);
  float h[32];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 16; ++i)
    if (h[i] != 0.f) return 1;
  cudaFree(d);
  return 0;
}
