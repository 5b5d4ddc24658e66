// Control: the early-exit idiom ahead of a __syncthreads. Since sm_70 a barrier waits only for
// the threads that have not exited, so threads past n may leave first (simt/README.md).
__global__ void scale_by_first(float* x, int n) {
  __shared__ float first;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (threadIdx.x == 0) first = x[blockIdx.x * blockDim.x];
  __syncthreads();
  x[i] *= first;
}

int main() {
  const int n = 100;
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  scale_by_first<<<2, 64>>>(x, n);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
