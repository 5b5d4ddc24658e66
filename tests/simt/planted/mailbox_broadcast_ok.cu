// Control for mailbox_broadcast (core/cluster_mailbox.cuh): each of four blocks sends one float a
// thread into its own row of every block's inbox (its own by a plain store, the others through
// their mailboxes), twice, each round with its own mailbox and inbox; every block arms the bytes
// the other three send it. Every block ends with every block's values of both rounds, and every
// phase of every mailbox gets exactly the bytes armed (the emulator's count checks).
#include <vector>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/launch.h"

constexpr unsigned kBlocks = 4, kThreads = 64, kRounds = 2;

__global__ void broadcast_rows(float* out) {
  GRPO_DYNAMIC_SHARED(float, smem);
  float* inbox = smem;                                                                  // [round][block][kThreads]
  auto* boxes = reinterpret_cast<grpo::Mailbox*>(smem + kRounds * kBlocks * kThreads);  // [round]
  const unsigned rank = grpo::cluster_block_rank();
  if (threadIdx.x == 0) grpo::mailbox_init(boxes, kRounds);
  __syncthreads();
  GRPO_CLUSTER_SYNC();
  for (unsigned round = 0; round < kRounds; ++round) {
    float* row = inbox + (round * kBlocks + rank) * kThreads;
    grpo::mailbox_broadcast<kBlocks>(row + threadIdx.x, boxes + round,
                                     float(round * 1000 + rank * kThreads + threadIdx.x));
    grpo::mailbox_sent(boxes + round, (kBlocks - 1) * kThreads * uint32_t(sizeof(float)));
    GRPO_MAILBOX_WAIT(boxes + round, 0u);
  }
  for (unsigned i = threadIdx.x; i < kRounds * kBlocks * kThreads; i += kThreads)
    out[blockIdx.x * kRounds * kBlocks * kThreads + i] = inbox[i];
  GRPO_CLUSTER_SYNC();
}

int main() {
  constexpr unsigned kPerBlock = kRounds * kBlocks * kThreads;
  float* out;
  cudaMalloc(&out, kBlocks * kPerBlock * sizeof(float));
  grpo::launch_cluster(broadcast_rows, dim3(kBlocks), dim3(kThreads),
                       kPerBlock * sizeof(float) + kRounds * sizeof(grpo::Mailbox), nullptr, kBlocks, out);
  std::vector<float> got(kBlocks * kPerBlock);
  cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (unsigned b = 0; b < kBlocks; ++b)
    for (unsigned round = 0; round < kRounds; ++round)
      for (unsigned from = 0; from < kBlocks; ++from)
        for (unsigned t = 0; t < kThreads; ++t)
          if (got[b * kPerBlock + (round * kBlocks + from) * kThreads + t] != float(round * 1000 + from * kThreads + t))
            return 1;
  return 0;
}
