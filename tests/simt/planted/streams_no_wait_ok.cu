// Control: the planted streams_no_wait.cu with the streams ordered, three ways: an event recorded
// after the write that the reading stream waits for; the host synchronising with the writing
// stream before it launches the read; and a blocking stream's kernel followed by the legacy
// stream's. No report, whichever order the emulator draws for the rest of the queued work.
#include "core/launch.h"

__global__ void produce(float* a, float scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = scale * i;
}

__global__ void consume(const float* a, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + 1.f;
}

int main() {
  const int n = 128;
  float *a, *out;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaStream_t s0, s1, blocking;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreate(&blocking);
  cudaEvent_t written;
  cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
  float h[n];
  bool right = true;
  for (int way = 0; way < 3; ++way) {
    const float scale = float(way + 2);
    if (way == 0) {
      grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, scale, n);
      cudaEventRecord(written, s0);
      cudaStreamWaitEvent(s1, written, 0);
      grpo::launch(consume, dim3(n / 64), dim3(64), 0, s1, a, out, n);
    } else if (way == 1) {
      grpo::launch(produce, dim3(n / 64), dim3(64), 0, s1, a, scale, n);
      cudaStreamSynchronize(s1);
      grpo::launch(consume, dim3(n / 64), dim3(64), 0, s0, a, out, n);
    } else {
      grpo::launch(produce, dim3(n / 64), dim3(64), 0, blocking, a, scale, n);
      grpo::launch(consume, dim3(n / 64), dim3(64), 0, 0, a, out, n);
    }
    cudaDeviceSynchronize();
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    right &= h[n - 1] == scale * (n - 1) + 1.f;
  }
  return right ? 0 : 1;
}
