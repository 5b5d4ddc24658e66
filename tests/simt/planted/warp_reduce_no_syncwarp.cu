// Planted bug: the old warp-synchronous shared-memory reduction, no __syncwarp between steps
// (racecheck hazard on a GPU since Volta).
// expect: data race on shared memory
__global__ void sum32(const float* x, float* out) {
  __shared__ float s[64];
  const unsigned t = threadIdx.x;
  s[t] = x[t];
  s[t + 32] = 0.f;
  __syncthreads();
  for (unsigned o = 16; o > 0; o >>= 1) s[t] += s[t + o];
  if (t == 0) *out = s[0];
}

int main() {
  float h[32], *x, *out, r = 0.f;
  for (int i = 0; i < 32; ++i) h[i] = float(i);
  cudaMalloc(&x, sizeof h);
  cudaMalloc(&out, sizeof(float));
  cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
  sum32<<<1, 32>>>(x, out);
  cudaMemcpy(&r, out, sizeof r, cudaMemcpyDeviceToHost);
  return r == 496.f ? 0 : 1;
}
