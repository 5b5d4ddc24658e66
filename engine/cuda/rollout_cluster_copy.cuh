// The cluster kernel's copies (rollout_cluster.cu): rows staged from global into shared memory,
// and a1 and h1 rows copied back out for the loss pass, a Chunk (8 or 16 bytes) at a time where
// the rows' alignment allows it. Device code only, for .cu files.
#pragma once
#include <cstdint>

#include "core/vector_access.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_step_block.cuh"

namespace grpo::rollout_cluster_copy {

using rollout_step_detail::kStepThreads;

// `rows` rows of H elements from global memory (H apart) into shared memory (`stride` apart), a
// Chunk at a time. The block's threads split into `groups` of `lanes`: lane l copies the chunks
// l, l + lanes, ... of rows g, g + groups, ... (g its group), kBatch rows' chunks in flight
// before it stores them, so a thread waits for an L2 round trip once a batch, not once an
// element (the small preset: one batch a step in bf16, four in fp32).
template <class Chunk, class T>
__device__ __forceinline__ void copy_rows(T* dst, unsigned stride, const T* src, unsigned rows, unsigned H) {
  constexpr unsigned kBatch = 8, E = sizeof(Chunk) / sizeof(T);  // E: elements a chunk
  const unsigned per_row = H / E, lanes = min(per_row, unsigned(kStepThreads)), groups = kStepThreads / lanes;
  const unsigned lane = threadIdx.x % lanes, group = threadIdx.x / lanes;
  if (group >= groups) return;            // the threads past groups x lanes (no barrier follows here)
  const unsigned dst_pitch = stride / E;  // in chunks, as per_row is the source's; rows x H < 2^31 (TrainConfig)
  const Chunk* from = reinterpret_cast<const Chunk*>(src);
  Chunk* to = reinterpret_cast<Chunk*>(dst);
  for (unsigned c = lane; c < per_row; c += lanes)
    for (unsigned r0 = group; r0 < rows; r0 += kBatch * groups) {
      Chunk v[kBatch];
#pragma unroll
      for (unsigned b = 0; b < kBatch; ++b)
        if (r0 + b * groups < rows) v[b] = from[(r0 + b * groups) * per_row + c];
#pragma unroll
      for (unsigned b = 0; b < kBatch; ++b)
        if (r0 + b * groups < rows) to[(r0 + b * groups) * dst_pitch + c] = v[b];
    }
}

// 8-byte chunks where both addresses, the rows' length and the destination's stride allow them
// (every fp32 or bf16 shape with H a multiple of 4), else an element at a time.
template <class T>
__device__ __forceinline__ void stage_rows(T* dst, unsigned stride, const T* src, unsigned rows, unsigned H) {
  const size_t a = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | (size_t(H) * sizeof(T)) |
                   (size_t(stride) * sizeof(T));
  if (a % 8 == 0)
    copy_rows<uint2>(dst, stride, src, rows, H);
  else
    copy_rows<T>(dst, stride, src, rows, H);
}

// The cluster's blocks, as launched (launch_rollout): a constant, so that the kernel's row / C and
// row % C are shifts, not the division sequence a run-time C costs per a1 element.
constexpr unsigned C = kClusterBlocks;

// Chunk-sized pieces of a row of H elements, where both rows are aligned to a chunk and H fills
// whole chunks: lane of `lanes` copies chunks lane, lane + lanes, ... Whether it could.
template <class Chunk, class T>
__device__ __forceinline__ bool copy_chunks(T* to, const T* from, unsigned H, unsigned lane, unsigned lanes) {
  if ((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from) | (size_t(H) * sizeof(T))) % sizeof(Chunk) !=
      0)
    return false;
  constexpr unsigned E = sizeof(Chunk) / sizeof(T);  // elements a chunk
#pragma unroll 1
  for (unsigned c = lane; c < H / E; c += lanes)
    *vector_at<Chunk>(to + size_t(c) * E) = *vector_at<const Chunk>(from + size_t(c) * E);
  return true;
}

// A row of H elements from shared memory to global memory by the block's threads first ..
// kStepThreads - 1: 16-byte pieces where the rows allow them (the presets' a1 rows, and h1's
// on tensor cores), else 8-byte ones (h1 of the fmaf product), else an element at a time.
template <class T>
__device__ __forceinline__ void copy_row_out(T* to, const T* from, unsigned H, unsigned first) {
  if (threadIdx.x < first) return;
  const unsigned lane = threadIdx.x - first, lanes = kStepThreads - first;
  if (copy_chunks<uint4>(to, from, H, lane, lanes) || copy_chunks<uint2>(to, from, H, lane, lanes)) return;
#pragma unroll 1
  for (unsigned c = lane; c < H; c += lanes) to[c] = from[c];
}

}  // namespace grpo::rollout_cluster_copy
