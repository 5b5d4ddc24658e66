// One warp's bf16 product on the tensor cores, one spelling for both compilers:
// d = a b + c for a 16 x 16 tile of A (bf16, rows), a 16 x 8 tile of B (bf16, columns) and 16 x 8
// fp32 sums, as mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80+) lays the fragments
// out over the lanes (simt/mma.cpp writes the layout down). Every lane of the warp calls it, with
// the same control flow. nvcc: the PTX instruction; SIMT: the emulator gathers the 32 lanes'
// fragments and sums each element as an fmaf chain over k ascending (a GPU rounds its sums its
// own way: results agree to a few units in the last place, not bit for bit).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
namespace grpo {
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                  const float (&c)[4]) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else  // no bf16 tensor cores: the host never launches a kernel that gets here
  __trap();
#endif
}
}  // namespace grpo
#elif defined(GRPO_SIMT)
namespace grpo {
// The call site (GCC's __builtin_FILE and __builtin_LINE as default arguments): every lane of the
// warp must be at the same one, as on a GPU, where .aligned means the same instruction.
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::simt::detail::MmaLane lane{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}, {c[0], c[1], c[2], c[3]}, {}};
  ::simt::detail::mma_m16n8k16_bf16(lane, file, line);
  for (int i = 0; i < 4; ++i) d[i] = lane.d[i];
}
}  // namespace grpo
#else
#error "core/mma.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif
