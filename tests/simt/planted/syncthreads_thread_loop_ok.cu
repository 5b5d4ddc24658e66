// Control for syncthreads_thread_loop.cu: every thread runs the block's longest trip count and
// only the work inside is conditional.
__global__ void ragged(const int* len, int max_len, float* out) {
  __shared__ float s[64];
  float acc = 0.f;
  for (int k = 0; k < max_len; ++k) {
    s[threadIdx.x] = float(k);
    __syncthreads();
    if (k < len[threadIdx.x]) acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}

int main() {
  int h[64];
  for (int i = 0; i < 64; ++i) h[i] = 1 + i % 3;
  int* len;
  float* out;
  float r[64];
  cudaMalloc(&len, sizeof h);
  cudaMalloc(&out, sizeof r);
  cudaMemcpy(len, h, sizeof h, cudaMemcpyHostToDevice);
  ragged<<<1, 64>>>(len, 3, out);
  cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 64; ++i)
    if (r[i] != float(h[i] * (h[i] - 1) / 2)) return 1;
  return 0;
}
