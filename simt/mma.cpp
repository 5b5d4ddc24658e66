// The emulator's warp-level matrix product (core/mma.cuh on the simt flavour): the 32 lanes'
// fragments of mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 gathered into A (16 x 16),
// B (16 x 8) and C (16 x 8) as the PTX ISA lays them out, and D = A B + C handed back the same way.
//
// The layout, with g = lane / 4 and q = lane % 4 (a register holds two bf16, the lower k or
// column in its low half):
//   A: a[0] row g, k 2q and 2q+1; a[1] row g+8, the same k; a[2] row g, k 2q+8 and 2q+9; a[3] row g+8
//   B: b[0] k 2q and 2q+1, column g; b[1] k 2q+8 and 2q+9, column g
//   C, D: [0] and [1] row g, columns 2q and 2q+1; [2] and [3] row g+8
//
// The sums: each element of D is an fmaf chain from C over k ascending, the order of the host's
// products and the project's fmaf kernels. bf16 products are exact in fp32, so this is the
// correctly rounded chain; a GPU's tensor cores add the 16 products their own way (not
// specified by NVIDIA), so the GPU tests allow a few units in the last place where the
// emulator's runs are bit for bit.
#include <cstring>

#include "simt/simt.h"

namespace simt {
namespace {
uint64_t g_products = 0;  // warp-level products completed since the program started
}  // namespace
uint64_t mma_products() { return g_products; }
}  // namespace simt

namespace simt::detail {
namespace {

float widen(uint32_t pair, unsigned half) { return bit_cast<float>(((pair >> (16 * half)) & 0xFFFFu) << 16); }

}  // namespace

void mma_m16n8k16_bf16_warp(MmaLane* const lanes[32]) {
  ++g_products;
  float A[16][16], B[16][8], C[16][8];
  for (unsigned lane = 0; lane < 32; ++lane) {
    const MmaLane& f = *lanes[lane];
    const unsigned g = lane / 4, q = lane % 4;
    for (unsigned h = 0; h < 2; ++h) {
      A[g][2 * q + h] = widen(f.a[0], h);
      A[g + 8][2 * q + h] = widen(f.a[1], h);
      A[g][2 * q + 8 + h] = widen(f.a[2], h);
      A[g + 8][2 * q + 8 + h] = widen(f.a[3], h);
      B[2 * q + h][g] = widen(f.b[0], h);
      B[2 * q + 8 + h][g] = widen(f.b[1], h);
      C[g][2 * q + h] = f.c[h];
      C[g + 8][2 * q + h] = f.c[2 + h];
    }
  }
  for (unsigned lane = 0; lane < 32; ++lane) {
    MmaLane& f = *lanes[lane];
    const unsigned g = lane / 4, q = lane % 4;
    for (unsigned e = 0; e < 4; ++e) {
      const unsigned i = g + 8 * (e / 2), j = 2 * q + e % 2;
      float acc = C[i][j];
      for (unsigned k = 0; k < 16; ++k) acc = std::fmaf(A[i][k], B[k][j], acc);
      f.d[e] = acc;
    }
  }
}

void mma_m16n8k16_bf16(MmaLane& lane, const char* file, int line) {
  warp_collective(WarpOp::Mma, 0xffffffffu, reinterpret_cast<uintptr_t>(&lane), 0, 32, file, line);
}

}  // namespace simt::detail
