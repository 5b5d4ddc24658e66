// A planted bug: mailbox_ok.cu with one inbox for both phases. A block sends its second value as
// soon as its own first one has come, whether or not its neighbour has read the first value it
// sent: a mailbox orders the bytes it counts before the receiver's wait, not the receiver's reads
// before the next phase's stores.
// expect: data race on distributed shared memory
#include <vector>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/launch.h"

constexpr unsigned kBlocks = 4, kThreads = 64;

__global__ void pass_right(float* out) {
  GRPO_DYNAMIC_SHARED(float, smem);
  float* inbox = smem;  // [kThreads], both phases'
  auto* box = reinterpret_cast<grpo::Mailbox*>(smem + 2 * kThreads);
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) grpo::mailbox_init(box, 1, kThreads / 32);
  __syncthreads();
  GRPO_CLUSTER_SYNC();
  float v = float(rank * kThreads + threadIdx.x);
  for (unsigned phase = 0; phase < 2; ++phase) {
    grpo::mailbox_send(inbox + threadIdx.x, (rank + 1) % kBlocks, box, v);
    grpo::mailbox_sent(box, kThreads * uint32_t(sizeof(float)));
    GRPO_MAILBOX_WAIT(box, phase % 2);
    v = inbox[threadIdx.x];
    __syncthreads();  // every thread past its wait before its thread 0 arms the next phase
  }
  out[blockIdx.x * kThreads + threadIdx.x] = v;
  GRPO_CLUSTER_SYNC();
}

int main() {
  float* out;
  cudaMalloc(&out, kBlocks * kThreads * sizeof(float));
  grpo::launch_cluster(pass_right, dim3(kBlocks), dim3(kThreads), 2 * kThreads * sizeof(float) + sizeof(grpo::Mailbox),
                       nullptr, kBlocks, out);
  std::vector<float> got(kBlocks * kThreads);
  cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (unsigned b = 0; b < kBlocks; ++b)
    for (unsigned t = 0; t < kThreads; ++t)
      if (got[b * kThreads + t] != float(((b + kBlocks - 2) % kBlocks) * kThreads + t)) return 1;
  return 0;
}
