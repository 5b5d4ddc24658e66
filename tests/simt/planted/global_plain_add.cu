// Planted bug: every thread does a plain += on one global counter (lost updates on a GPU).
// expect: data race on global memory
__global__ void count_positive(const float* x, int n, int* count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > 0.f) *count += 1;
}

int main() {
  const int n = 256;
  float h[n];
  for (int i = 0; i < n; ++i) h[i] = i % 2 ? 1.f : -1.f;
  float* x;
  int* count;
  int r = 0;
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&count, sizeof(int));
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemset(count, 0, sizeof(int));
  count_positive<<<n / 64, 64>>>(x, n, count);
  cudaMemcpy(&r, count, sizeof r, cudaMemcpyDeviceToHost);
  return r == n / 2 ? 0 : 1;
}
