// Control for mailbox_short_count.cu: each block sends its right-hand neighbour one float a
// thread through the neighbour's mailbox, twice, and the receiver arms what arrives; every block
// ends with its neighbour-but-one's values. Each round has its own mailbox and its own inbox, so
// this is a valid protocol on a GPU too: a sender has its second value as soon as its own first
// one has come, whether or not its neighbour has completed its first phase or read its first
// value (one mailbox for both rounds would let round 1's bytes count toward round 0 there; one
// inbox is mailbox_one_inbox.cu's race).
#include <vector>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/launch.h"

constexpr unsigned kBlocks = 4, kThreads = 64, kRounds = 2;

__global__ void pass_right(float* out) {
  GRPO_DYNAMIC_SHARED(float, smem);
  float* inbox = smem;                                                        // [round][kThreads]
  auto* boxes = reinterpret_cast<grpo::Mailbox*>(smem + kRounds * kThreads);  // [round]
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) grpo::mailbox_init(boxes, kRounds);
  __syncthreads();
  GRPO_CLUSTER_SYNC();
  float v = float(rank * kThreads + threadIdx.x);
  for (unsigned round = 0; round < kRounds; ++round) {
    grpo::mailbox_send(inbox + round * kThreads + threadIdx.x, (rank + 1) % kBlocks, boxes + round, v);
    grpo::mailbox_sent(boxes + round, kThreads * uint32_t(sizeof(float)));
    GRPO_MAILBOX_WAIT(boxes + round, 0u);
    v = inbox[round * kThreads + threadIdx.x];
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
