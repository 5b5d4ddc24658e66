// A planted bug: each block sends its right-hand neighbour one float a thread through the
// neighbour's mailbox, and the receiver arms one float fewer than arrive. On a GPU the phase
// would complete before the last store lands (or, with one more, never): the emulator reports
// the count at the wait.
// expect: bytes armed
#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/launch.h"

constexpr unsigned kBlocks = 4, kThreads = 64;

__global__ void pass_right(float* out) {
  GRPO_DYNAMIC_SHARED(float, smem);
  float* inbox = smem;  // [kThreads]
  auto* box = reinterpret_cast<grpo::Mailbox*>(smem + kThreads);
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) grpo::mailbox_init(box, 1);
  __syncthreads();
  GRPO_CLUSTER_SYNC();
  grpo::mailbox_send(inbox + threadIdx.x, (rank + 1) % kBlocks, box, float(rank * kThreads + threadIdx.x));
  grpo::mailbox_sent(box, (kThreads - 1) * uint32_t(sizeof(float)));
  GRPO_MAILBOX_WAIT(box, 0u);
  out[blockIdx.x * kThreads + threadIdx.x] = inbox[threadIdx.x];
  GRPO_CLUSTER_SYNC();
}

int main() {
  float* out;
  cudaMalloc(&out, kBlocks * kThreads * sizeof(float));
  grpo::launch_cluster(pass_right, dim3(kBlocks), dim3(kThreads), kThreads * sizeof(float) + sizeof(grpo::Mailbox),
                       nullptr, kBlocks, out);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
