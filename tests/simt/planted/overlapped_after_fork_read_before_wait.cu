// Planted bug: two streams fork from one kernel inside a capture, and the overlapped kernel
// captured first after it (the one a GPU gives the programmatic edge: core/launch.h,
// follows_kernels) reads that kernel's output before it waits for it. The graph's replay runs the
// pair back to back whatever order it draws for the rest, so the check sees it under every seed.
// expect: access before wait_for_previous_kernel() to global memory the kernel before it wrote
#include "core/grid_dependency.cuh"
#include "core/launch.h"

__global__ void produce(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 2.f * i;
  grpo::release_next_kernel();
}

__global__ void consume(const float* a, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float v = i < n ? a[i] : 0.f;  // the bug: a is the kernel before's output
  grpo::wait_for_previous_kernel();
  if (i < n) out[i] = v + 1.f;
}

int main() {
  const int n = 128;
  float *a, *out0, *out1;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&out0, n * sizeof(float));
  cudaMalloc(&out1, n * sizeof(float));
  cudaStream_t s0, s1;
  cudaEvent_t fork, join;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, n);
  cudaEventRecord(fork, s0);
  cudaStreamWaitEvent(s1, fork, 0);
  grpo::launch_overlapped(consume, dim3(n / 64), dim3(64), 0, s1, a, out1, n);  // first after produce
  grpo::launch_overlapped(consume, dim3(n / 64), dim3(64), 0, s0, a, out0, n);  // second: ordinary
  cudaEventRecord(join, s1);
  cudaStreamWaitEvent(s0, join, 0);
  cudaStreamEndCapture(s0, &g);
  cudaGraphInstantiate(&exec, g, 0);
  cudaGraphLaunch(exec, s0);
  float h[n];
  cudaStreamSynchronize(s0);
  cudaMemcpy(h, out1, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 2.f * (n - 1) + 1.f ? 0 : 1;
}
