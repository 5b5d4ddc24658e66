// Deterministic means (see reduce.h): per-block partial sums into scratch, then one block.
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/reduce.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {

// Stage 1 for floats: each thread adds its grid-stride elements in index order (fixed, since
// the grid is a function of n), then a fixed tree over the block. Consecutive threads read
// consecutive floats: every warp load is one 128-byte line.
__global__ void mean_f32_partials_kernel(const float* __restrict__ x, int n, float* __restrict__ partials) {
  follow_previous_kernel();
  __shared__ float warp_sums[kReduceThreads / 32];
  float s = 0.f;
  for (int i = blockIdx.x * kReduceThreads + threadIdx.x; i < n; i += gridDim.x * kReduceThreads) s += x[i];
  s = block_sum<kReduceThreads>(s, warp_sums);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// Stage 1 for integers: exact 64-bit sums, so the order does not even matter here; the block's
// total goes to scratch as a float (exact below 2^24).
__global__ void mean_i32_partials_kernel(const int32_t* __restrict__ x, int n, float* __restrict__ partials) {
  follow_previous_kernel();
  __shared__ long long warp_sums[kReduceThreads / 32];
  long long s = 0;
  for (int i = blockIdx.x * kReduceThreads + threadIdx.x; i < n; i += gridDim.x * kReduceThreads) s += x[i];
  s = block_sum<kReduceThreads>(s, warp_sums);
  if (threadIdx.x == 0) partials[blockIdx.x] = static_cast<float>(s);
}

// Stage 2, one block: at most kReduceMaxBlocks partials, one per thread, added in double (a
// few hundred double adds per call cost nothing even where fp64 is slow) and divided by n.
__global__ void mean_finalize_kernel(const float* __restrict__ partials, int blocks, int n, float* __restrict__ out) {
  follow_previous_kernel();
  __shared__ double warp_sums[kReduceThreads / 32];
  double s = 0.0;
  for (int i = threadIdx.x; i < blocks; i += kReduceThreads) s += partials[i];
  s = block_sum<kReduceThreads>(s, warp_sums);
  if (threadIdx.x == 0) *out = static_cast<float>(s / n);
}

void check_count(int n, const char* who) {
  if (n < 1) throw std::invalid_argument(std::string(who) + ": n must be >= 1, got " + std::to_string(n));
}

}  // namespace

// Bytes per call: 4n read, 8 * blocks scratch written and read back (<= 2 KiB), 4 written.
void mean_f32_cuda(const float* x, int n, float* out, float* scratch, cudaStream_t stream) {
  check_count(n, "mean_f32_cuda");
  const unsigned blocks = reduce_blocks(n);
  launch_overlapped(mean_f32_partials_kernel, blocks, kReduceThreads, 0, stream, x, n, scratch);
  launch_overlapped(mean_finalize_kernel, 1, kReduceThreads, 0, stream, static_cast<const float*>(scratch),
                    static_cast<int>(blocks), n, out);
}

// Bytes per call: as mean_f32_cuda (4n read, 8 * blocks scratch traffic, 4 written).
void mean_i32_cuda(const int32_t* x, int n, float* out, float* scratch, cudaStream_t stream) {
  check_count(n, "mean_i32_cuda");
  const unsigned blocks = reduce_blocks(n);
  launch_overlapped(mean_i32_partials_kernel, blocks, kReduceThreads, 0, stream, x, n, scratch);
  launch_overlapped(mean_finalize_kernel, 1, kReduceThreads, 0, stream, static_cast<const float*>(scratch),
                    static_cast<int>(blocks), n, out);
}

}  // namespace grpo
