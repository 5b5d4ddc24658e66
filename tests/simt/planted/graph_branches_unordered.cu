// Planted bug: a captured fork where the second stream's kernel reads what the origin stream's
// kernel writes after the fork point: the two are branches of the graph with no edge between
// them, so a GPU may run them in either order or at once. The emulator replays the nodes in a
// drawn order, one stream's queue, but orders each node for its memory checks after its graph
// dependencies only: the read is reported whichever branch the draw ran first.
// expect: data race on global memory between streams
#include "core/launch.h"

__global__ void produce(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 2.f * i;
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
  cudaStream_t s0, s1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEvent_t fork, join;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal);
  cudaEventRecord(fork, s0);
  cudaStreamWaitEvent(s1, fork, 0);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, n);
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s1, a, out, n);  // should wait for produce
  cudaEventRecord(join, s1);
  cudaStreamWaitEvent(s0, join, 0);
  cudaStreamEndCapture(s0, &g);
  cudaGraphInstantiate(&exec, g, 0);
  cudaGraphLaunch(exec, s0);
  cudaStreamSynchronize(s0);
  float h[n];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 2.f * (n - 1) + 1.f ? 0 : 1;
}
