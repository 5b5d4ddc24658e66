// Control for global_oob_read.cu: the last element has no right neighbour and is left alone.
__global__ void shift_left(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) y[i] = x[i + 1];
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
