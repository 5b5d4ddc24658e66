// Planted bug: every thread reads a broadcast slot, then thread 0 overwrites it after only a
// __syncwarp: the readers of warp 1 are not ordered before the write (racecheck on a GPU).
// expect: data race on shared memory
__global__ void running_total(const float* x, float* out, int steps) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.f;
  __syncthreads();
  for (int k = 0; k < steps; ++k) {
    const float seen = total;
    out[k * blockDim.x + threadIdx.x] = seen;
    __syncwarp();
    if (threadIdx.x == 0) total = seen + x[k];
    __syncthreads();
  }
}

int main() {
  const int steps = 4, threads = 64;
  float h[steps] = {1.f, 2.f, 3.f, 4.f}, *x, *out;
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, steps * threads * sizeof(float));
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  running_total<<<1, threads>>>(x, out, steps);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
