// The mma_tiles test kernel (kernels/mma_check.h): a warp a tile, one tensor-core product each.
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "core/mma.cuh"
#include "kernels/mma_check.h"

namespace grpo {
namespace {

// Two bf16 in one register, the first in the low half (the lower k).
__device__ __forceinline__ uint32_t pair(const Bf16* p) { return uint32_t(p[0].bits) | uint32_t(p[1].bits) << 16; }

// Lane l is in group g = l / 4 at position q = l % 4: it holds A's rows g and g + 8 at k = 2q,
// 2q + 1 and 2q + 8, 2q + 9; B's column g at the same k; C's and D's rows g and g + 8 at columns
// 2q and 2q + 1.
__global__ void mma_tiles_kernel(const Bf16* a, const Bf16* b, const float* c, float* d) {
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const Bf16* A = a + 256 * w;
  const Bf16* B = b + 128 * w;
  const float* C = c + 128 * w;
  const uint32_t af[4] = {pair(A + g * 16 + 2 * q), pair(A + (g + 8) * 16 + 2 * q), pair(A + g * 16 + 2 * q + 8),
                          pair(A + (g + 8) * 16 + 2 * q + 8)};
  const uint32_t bf[2] = {pair(B + g * 16 + 2 * q), pair(B + g * 16 + 2 * q + 8)};
  const float cf[4] = {C[g * 8 + 2 * q], C[g * 8 + 2 * q + 1], C[(g + 8) * 8 + 2 * q], C[(g + 8) * 8 + 2 * q + 1]};
  float df[4];
  mma_m16n8k16_bf16(df, af, bf, cf);
  float* D = d + 128 * w;
  D[g * 8 + 2 * q] = df[0], D[g * 8 + 2 * q + 1] = df[1];
  D[(g + 8) * 8 + 2 * q] = df[2], D[(g + 8) * 8 + 2 * q + 1] = df[3];
}

}  // namespace

void mma_tiles_cuda(const Bf16* a, const Bf16* b, const float* c, float* d, int warps, cudaStream_t stream) {
  if (warps < 1 || warps > kMmaCheckMaxWarps)
    throw std::invalid_argument("mma_tiles_cuda: warps must be in [1, " + std::to_string(kMmaCheckMaxWarps) +
                                "], got " + std::to_string(warps));
  launch(mma_tiles_kernel, dim3(1), dim3(32 * unsigned(warps)), 0, stream, a, b, c, d);
}

}  // namespace grpo
