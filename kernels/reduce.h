// Deterministic means of a device array (the per-epoch metrics: mean final reward, mean score).
//
// Two stages, no atomics: each block of the first stage writes one partial sum to caller-owned
// scratch, then one block adds the partials in a fixed order and divides by n. The number of
// first-stage blocks depends on n only (never on the device or the schedule), so every addition
// happens in the same order on every run and the result is the same to the bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

constexpr unsigned kReduceThreads = 256;    // threads per block in every reduction of this family
constexpr unsigned kReduceMaxBlocks = 256;  // first-stage blocks at most: the last stage is one block

// First-stage blocks for n elements: one element per thread up to kReduceMaxBlocks blocks, then
// grid-stride loops. A pure function of n (the reason the result is schedule-free).
GRPO_HD unsigned reduce_blocks(size_t n) {
  const size_t b = (n + kReduceThreads - 1) / kReduceThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kReduceMaxBlocks ? kReduceMaxBlocks : b));
}

// Scratch (floats) that mean_f32 / mean_i32 need for n elements: one partial per block.
size_t mean_scratch_floats(int n);

// *out = mean(x[0..n)), n >= 1 (std::invalid_argument otherwise). out and scratch are device
// pointers for the _cuda launchers, host pointers for the twins (which do not use scratch and
// accumulate in double). mean_i32: the per-block partial sums are exact integers, stored as
// floats (exact while a block's sum stays below 2^24 in magnitude).
void mean_f32_host(const float* x, int n, float* out, float* scratch);
void mean_i32_host(const int32_t* x, int n, float* out, float* scratch);

#if defined(GRPO_HAVE_CUDA)
void mean_f32_cuda(const float* x, int n, float* out, float* scratch, cudaStream_t stream);
void mean_i32_cuda(const int32_t* x, int n, float* out, float* scratch, cudaStream_t stream);
#endif

}  // namespace grpo
