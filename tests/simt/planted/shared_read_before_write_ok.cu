// Control for shared_read_before_write.cu: thread 0 also fills the slot past the end.
__global__ void neighbour_diff(const float* x, float* y) {
  __shared__ float s[65];
  const unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * 64 + t];
  if (t == 0) s[64] = 0.f;
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
