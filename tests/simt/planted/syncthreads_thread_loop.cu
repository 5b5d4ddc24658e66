// Planted bug: __syncthreads inside a loop whose trip count depends on the thread (undefined on
// a GPU; synccheck reports it).
// expect: barrier divergence
__global__ void ragged(const int* len, float* out) {
  __shared__ float s[64];
  float acc = 0.f;
  for (int k = 0; k < len[threadIdx.x]; ++k) {
    s[threadIdx.x] = float(k);
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}

int main() {
  int h[64];
  for (int i = 0; i < 64; ++i) h[i] = 1 + i % 3;
  int* len;
  float* out;
  cudaMalloc(&len, sizeof h);
  cudaMalloc(&out, 64 * sizeof(float));
  cudaMemcpy(len, h, sizeof h, cudaMemcpyHostToDevice);
  ragged<<<1, 64>>>(len, out);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
