// Kernels for the emulator's warp-level matrix product tests (test_mma.cpp): each warp of a block
// loads its tile's fragments element by element, as the PTX ISA lays them out, multiplies on
// core/mma.cuh and stores D; and a warp with one lane that skips the product.
#include "core/mma.cuh"
#include "tests/simt/self_test_kernels.h"

namespace simt_test {
namespace {

// Two bf16 (as their bits) in one register, the first in the low half.
uint32_t pair(const uint16_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 16; }

// Warp w: A at a + 256 w ([16][16], rows), B at b + 128 w ([8][16]: column n's 16 k in a row),
// C and D at c, d + 128 w ([16][8], rows).
__global__ void mma_tiles_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const uint16_t* A = a + 256 * w;
  const uint16_t* B = b + 128 * w;
  const float* C = c + 128 * w;
  const uint32_t af[4] = {pair(A + g * 16 + 2 * q), pair(A + (g + 8) * 16 + 2 * q), pair(A + g * 16 + 2 * q + 8),
                          pair(A + (g + 8) * 16 + 2 * q + 8)};
  const uint32_t bf[2] = {pair(B + g * 16 + 2 * q), pair(B + g * 16 + 2 * q + 8)};
  const float cf[4] = {C[g * 8 + 2 * q], C[g * 8 + 2 * q + 1], C[(g + 8) * 8 + 2 * q], C[(g + 8) * 8 + 2 * q + 1]};
  float df[4];
  grpo::mma_m16n8k16_bf16(df, af, bf, cf);
  float* D = d + 128 * w;
  D[g * 8 + 2 * q] = df[0], D[g * 8 + 2 * q + 1] = df[1];
  D[(g + 8) * 8 + 2 * q] = df[2], D[(g + 8) * 8 + 2 * q + 1] = df[3];
}

__global__ void mma_one_lane_skips_kernel(float* d) {
  const uint32_t a[4] = {}, b[2] = {};
  const float c[4] = {};
  float r[4] = {};
  if (threadIdx.x != 5) grpo::mma_m16n8k16_bf16(r, a, b, c);
  d[threadIdx.x] = r[0];
}

// Lanes 0-15 at one mma, lanes 16-31 at another: two instructions, which .aligned forbids.
__global__ void mma_two_sites_kernel(float* d) {
  const uint32_t a[4] = {}, b[2] = {};
  const float c[4] = {};
  float r[4] = {};
  if (threadIdx.x < 16)
    grpo::mma_m16n8k16_bf16(r, a, b, c);
  else
    grpo::mma_m16n8k16_bf16(r, a, b, c);
  d[threadIdx.x] = r[0];
}

}  // namespace

cudaError_t mma_two_sites(float* d) { return simt::launch(mma_two_sites_kernel, dim3(1), dim3(32), 0, 0, d); }
cudaError_t mma_tiles(const uint16_t* a, const uint16_t* b, const float* c, float* d, int warps) {
  return simt::launch(mma_tiles_kernel, dim3(1), dim3(32 * warps), 0, 0, a, b, c, d);
}
cudaError_t mma_one_lane_skips(float* d) { return simt::launch(mma_one_lane_skips_kernel, dim3(1), dim3(32), 0, 0, d); }

}  // namespace simt_test
