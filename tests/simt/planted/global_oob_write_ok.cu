// Control for global_oob_write.cu: the bound is i < n.
__global__ void fill(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.f;
}

int main() {
  const int n = 100;
  float* y;
  float h[n];
  cudaMalloc(&y, n * sizeof(float));
  fill<<<(n + 63) / 64, 64>>>(y, n);
  cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost);
  for (float v : h)
    if (v != 1.f) return 1;
  return 0;
}
