// A planted bug: mailbox_ok.cu with one inbox for both rounds. A block sends its second value as
// soon as its own first one has come, whether or not its neighbour has read the first value it
// sent: a mailbox orders the bytes it counts before the receiver's wait, not the receiver's reads
// before the next round's stores.
// expect: data race on distributed shared memory
#include <vector>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/launch.h"

constexpr unsigned kBlocks = 4, kThreads = 64, kRounds = 2;

__global__ void pass_right(float* out) {
  GRPO_DYNAMIC_SHARED(float, smem);
  float* inbox = smem;                                                        // [kThreads], both rounds'
  auto* boxes = reinterpret_cast<grpo::Mailbox*>(smem + kRounds * kThreads);  // [round]
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) grpo::mailbox_init(boxes, kRounds);
  __syncthreads();
  GRPO_CLUSTER_SYNC();
  float v = float(rank * kThreads + threadIdx.x);
  for (unsigned round = 0; round < kRounds; ++round) {
    grpo::mailbox_send(inbox + threadIdx.x, (rank + 1) % kBlocks, boxes + round, v);
    grpo::mailbox_sent(boxes + round, kThreads * uint32_t(sizeof(float)));
    GRPO_MAILBOX_WAIT(boxes + round, 0u);
    v = inbox[threadIdx.x];
  }
  out[blockIdx.x * kThreads + threadIdx.x] = v;
  GRPO_CLUSTER_SYNC();
}

int main() {
  float* out;
  cudaMalloc(&out, kBlocks * kThreads * sizeof(float));
  grpo::launch_cluster(pass_right, dim3(kBlocks), dim3(kThreads),
                       kRounds * (kThreads * sizeof(float) + sizeof(grpo::Mailbox)), nullptr, kBlocks, out);
  std::vector<float> got(kBlocks * kThreads);
  cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (unsigned b = 0; b < kBlocks; ++b)
    for (unsigned t = 0; t < kThreads; ++t)
      if (got[b * kThreads + t] != float(((b + kBlocks - kRounds) % kBlocks) * kThreads + t)) return 1;
  return 0;
}
