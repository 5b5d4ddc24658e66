// Planted bug: an off-by-one bound writes one element past a cudaMalloc'd buffer.
// expect: out-of-bounds global memory access: write
__global__ void fill(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] = 1.f;
}

int main() {
  const int n = 100;
  float* y;
  cudaMalloc(&y, n * sizeof(float));
  fill<<<(n + 63) / 64, 64>>>(y, n);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
