// Control: the planted graph_branches_unordered.cu with the edge: the origin stream records an
// event after its kernel and the forked stream waits for it before reading. Launched four times,
// and eager work on the origin stream between launches: no report, whatever order each replay
// draws.
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
  float *a, *b, *out;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaStream_t s0, s1;
  cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaEvent_t fork, written, join;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal);
  cudaEventRecord(fork, s0);
  cudaStreamWaitEvent(s1, fork, 0);
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s1, b, 5.f, n);  // a branch of its own
  grpo::launch(produce, dim3(n / 64), dim3(64), 0, s0, a, 2.f, n);
  cudaEventRecord(written, s0);
  cudaStreamWaitEvent(s1, written, 0);
  grpo::launch(consume, dim3(n / 64), dim3(64), 0, s1, a, out, n);
  cudaEventRecord(join, s1);
  cudaStreamWaitEvent(s0, join, 0);
  cudaStreamEndCapture(s0, &g);
  cudaGraphInstantiate(&exec, g, 0);
  for (int launch = 0; launch < 4; ++launch) {
    cudaGraphLaunch(exec, s0);
    grpo::launch(consume, dim3(n / 64), dim3(64), 0, s0, b, a, n);  // after the whole graph
  }
  cudaStreamSynchronize(s0);
  float h[n];
  cudaMemcpy(h, a, sizeof h, cudaMemcpyDeviceToHost);
  return h[n - 1] == 5.f * (n - 1) + 1.f ? 0 : 1;
}
