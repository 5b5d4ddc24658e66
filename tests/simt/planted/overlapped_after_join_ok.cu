// Control: a kernel launched overlapped right after a join (two kernels before it, one a stream)
// reads both their outputs before its wait. A GPU's graph gives it no programmatic edge there
// (core/launch.h, follows_kernels: one kernel node before it, which nothing else follows), so it
// starts only when both have ended and the reads are sound; the emulator captures it the same way
// and reports nothing, whichever of the two its replay runs last.
#include "core/grid_dependency.cuh"
#include "core/launch.h"

__global__ void produce(float* a, float scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = scale * i;
  grpo::release_next_kernel();
}

__global__ void consume(const float* a, const float* b, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float v = i < n ? a[i] + b[i] : 0.f;
  grpo::wait_for_previous_kernel();
  if (i < n) out[i] = v;
}

int main() {
  const int n = 128;
  float *a, *b, *out;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaStream_t s0, s1;
  cudaEvent_t fork, join;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal);
  cudaEventRecord(fork, s0);
  cudaStreamWaitEvent(s1, fork, 0);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, 2.f, n);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s1, b, 3.f, n);
  cudaEventRecord(join, s1);
  cudaStreamWaitEvent(s0, join, 0);
  grpo::launch_overlapped(consume, dim3(n / 64), dim3(64), 0, s0, a, b, out, n);
  cudaStreamEndCapture(s0, &g);
  cudaGraphInstantiate(&exec, g, 0);
  for (int launch = 0; launch < 4; ++launch) cudaGraphLaunch(exec, s0);
  float h[n];
  cudaStreamSynchronize(s0);
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 5.f * (n - 1) ? 0 : 1;
}
