// A tiny op that only exists to test core/mma.cuh where the kernels run, on a GPU as on the
// emulator (tests/kernels/test_mma_cuda.cpp): warp w of one block computes D_w = A_w B_w + C_w
// with one mma.sync.m16n8k16 (bf16 operands, fp32 sums), its fragments loaded from memory as the
// PTX ISA lays them out over the lanes. The emulator's self-test (tests/simt/test_mma.cpp) checks
// the emulator against its own model; this one checks that model against the hardware, apart
// from the cluster kernel that uses it.
// Layout, for w < warps: A_w at a + 256 w ([16][16] bf16, rows), B_w at b + 128 w ([8][16]: column
// n's 16 values of k in a row), C_w and D_w at c + 128 w and d + 128 w ([16][8] fp32, rows).
#pragma once
#include <cmath>

#include "kernels/bf16.h"

namespace grpo {

constexpr int kMmaCheckMaxWarps = 32;

// Host twin: each element of D an fmaf chain over k ascending from C's, the emulator's order
// (a GPU's tensor cores sum their own way: equal to a few units in the last place).
inline void mma_tiles_host(const Bf16* a, const Bf16* b, const float* c, float* d, int warps) {
  for (int w = 0; w < warps; ++w)
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        float s = c[128 * w + i * 8 + j];
        for (int k = 0; k < 16; ++k)
          s = std::fmaf(to_float(a[256 * w + i * 16 + k]), to_float(b[128 * w + j * 16 + k]), s);
        d[128 * w + i * 8 + j] = s;
      }
}

#if defined(GRPO_HAVE_CUDA)
// warps in [1, kMmaCheckMaxWarps]; device pointers. Needs sm_80 or newer (bf16 tensor cores).
void mma_tiles_cuda(const Bf16* a, const Bf16* b, const float* c, float* d, int warps, cudaStream_t stream);
#endif

}  // namespace grpo
