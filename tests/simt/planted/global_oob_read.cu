// Planted bug: the last thread reads one element past a cudaMalloc'd buffer (memcheck on a GPU).
// expect: out-of-bounds global memory access: read
__global__ void shift_left(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i + 1];
}

int main() {
  const int n = 100;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  shift_left<<<(n + 63) / 64, 64>>>(x, y, n);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
