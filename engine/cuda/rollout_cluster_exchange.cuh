// What the cluster kernel's blocks send each other through their mailboxes
// (core/cluster_mailbox.cuh; rollout_cluster.cu): where the product's a1 elements go, and the
// bytes a phase of each mailbox brings a block from the other blocks. Device code only, for .cu
// files.
#pragma once
#include <cstdint>

#include "core/cluster_mailbox.cuh"
#include "engine/cuda/rollout_cluster_copy.cuh"

namespace grpo::rollout_cluster_exchange {

using rollout_cluster_copy::C;

// Where the block's product puts a1 element (row, col) of a step (row of the cluster's games,
// col of the block's columns): into the a1 rows of the block that runs the game (game row i on
// block i % C, its row i / C there), through its a1 mailbox. That block copies its rows to
// global memory, for the loss pass, while it plays the game (ClusterHooks).
struct A1Out {
  float* rows;  // this block's a1 rows from the block's first column: the same offset in the owner's
  unsigned pitch;
  Mailbox* box;  // this block's a1 mailbox: the same offset in the owner's
  __device__ __forceinline__ void operator()(unsigned row, unsigned col, float v) const {
    mailbox_send(rows + size_t(row / C) * pitch + col, row % C, box, v);
  }
};

// The bytes the other blocks send a block in a phase of each mailbox (its own sends are stores,
// not counted): its games' a1 rows at their columns, and their games' next h1 rows, four
// elements a send (rollout_step_block's groups; the last one padded with zeros past H, into the
// row's padding: no product reads past H).
__device__ __forceinline__ unsigned block_games(unsigned rows, unsigned rank) {
  return rows > rank ? (rows - rank + C - 1) / C : 0u;
}
__device__ __forceinline__ uint32_t a1_bytes(unsigned rows, unsigned rank, unsigned H, unsigned cols) {
  return block_games(rows, rank) * (H - cols) * uint32_t(sizeof(float));
}
template <class T>
__device__ __forceinline__ uint32_t h1_bytes(unsigned rows, unsigned rank, unsigned H) {
  return (rows - block_games(rows, rank)) * ((H + 3) / 4 * 4) * uint32_t(sizeof(T));
}

}  // namespace grpo::rollout_cluster_exchange
