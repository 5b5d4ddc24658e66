// Control for shared_overwrite_after_reads.cu: a __syncthreads orders every reader before the
// write.
__global__ void running_total(const float* x, float* out, int steps) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.f;
  __syncthreads();
  for (int k = 0; k < steps; ++k) {
    const float seen = total;
    out[k * blockDim.x + threadIdx.x] = seen;
    __syncthreads();
    if (threadIdx.x == 0) total = seen + x[k];
    __syncthreads();
  }
}

int main() {
  const int steps = 4, threads = 64;
  float h[steps] = {1.f, 2.f, 3.f, 4.f}, r[steps * threads], *x, *out;
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, sizeof r);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  running_total<<<1, threads>>>(x, out, steps);
  cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
  float want = 0.f;
  for (int k = 0; k < steps; ++k) {
    for (int t = 0; t < threads; ++t)
      if (r[k * threads + t] != want) return 1;
    want += h[k];
  }
  return 0;
}
