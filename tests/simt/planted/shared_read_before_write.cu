// Planted bug: each thread reads its right neighbour's shared slot, which only threads below
// blockDim.x - 1 write, and the last thread reads a slot no one wrote.
// expect: shared memory read before any thread of this block wrote it
__global__ void neighbour_diff(const float* x, float* y) {
  __shared__ float s[65];
  const unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * 64 + t];
  __syncthreads();
  y[blockIdx.x * 64 + t] = s[t + 1] - s[t];
}

int main() {
  float* x;
  float* y;
  cudaMalloc(&x, 128 * sizeof(float));
  cudaMalloc(&y, 128 * sizeof(float));
  cudaMemset(x, 0, 128 * sizeof(float));
  neighbour_diff<<<2, 64>>>(x, y);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
