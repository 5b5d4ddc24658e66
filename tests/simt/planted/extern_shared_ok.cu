// Control for tools/simt_run itself: a kernel with `extern __shared__` dynamic shared memory
// (function and file scope), a template kernel, and a launch with all four arguments.
extern __shared__ float tile[];

template <int kScale>
__global__ void reverse_scaled(const float* x, float* y) {
  extern __shared__ __align__(16) float buf[];
  const unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
  buf[t] = x[base + t] * kScale;
  tile[blockDim.x + t] = 0.f;
  __syncthreads();
  y[base + t] = buf[blockDim.x - 1 - t] + tile[blockDim.x + t];
}

int main() {
  const int n = 256, threads = 64;
  float h[n], r[n], *x, *y;
  for (int i = 0; i < n; ++i) h[i] = float(i);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&y, sizeof r);
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  reverse_scaled<2><<<n / threads, threads, 2 * threads * sizeof(float), s>>>(x, y);
  if (cudaGetLastError() != cudaSuccess) return 1;
  cudaStreamSynchronize(s);
  cudaMemcpy(r, y, sizeof r, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) {
    const int b = i / threads * threads, t = i % threads;
    if (r[i] != 2.f * float(b + threads - 1 - t)) return 1;
  }
  return 0;
}
