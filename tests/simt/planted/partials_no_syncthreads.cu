// Planted bug: warp 0 adds the other warps' shared partial sums with no __syncthreads between
// their writes and its reads (racecheck hazard on a GPU).
// expect: shared memory
__global__ void block_sums(const float* x, float* out) {
  __shared__ float partial[4];
  float v = x[blockIdx.x * 128 + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0] + partial[1] + partial[2] + partial[3];
}

int main() {
  const int blocks = 4, n = blocks * 128;
  float h[n], r[blocks], *x, *out;
  for (int i = 0; i < n; ++i) h[i] = 1.f;
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, sizeof r);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  block_sums<<<blocks, 128>>>(x, out);
  cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
  for (float s : r)
    if (s != 128.f) return 1;
  return 0;
}
