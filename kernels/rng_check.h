// A tiny op that only exists to test core/rng.h: it writes the draw4 words of a grid of
// counters, so a test can compare the device's bits with the host's (tests/kernels/test_rng*).
// Layout: out[(((step * n_index) + index) * n_block + block) * 4 + j], j = x, y, z, w,
// for step < n_step, index < n_index, block < n_block, all drawn with (seed, purpose, epoch).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/rng.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

inline size_t rng_fill_words(uint32_t n_step, uint32_t n_index, uint32_t n_block) {
  return size_t{n_step} * n_index * n_block * 4;
}

// Host twin.
inline void rng_fill_host(uint32_t* out, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t n_step,
                          uint32_t n_index, uint32_t n_block) {
  size_t o = 0;
  for (uint32_t st = 0; st < n_step; ++st)
    for (uint32_t ix = 0; ix < n_index; ++ix)
      for (uint32_t b = 0; b < n_block; ++b) {
        const Bits4 r = draw4(seed, purpose, epoch, st, ix, b);
        out[o++] = r.x;
        out[o++] = r.y;
        out[o++] = r.z;
        out[o++] = r.w;
      }
}

#if defined(GRPO_HAVE_CUDA)
// out is device memory of rng_fill_words(n_step, n_index, n_block) words; one thread per draw4.
void rng_fill_cuda(uint32_t* out, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t n_step, uint32_t n_index,
                   uint32_t n_block, cudaStream_t stream);
#endif

}  // namespace grpo
