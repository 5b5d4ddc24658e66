// Inverted dropout from Philox counters (docs/design.md principle 4). Element (row, col) is kept iff
// bits_to_uniform(word col % 4 of draw4(seed, purpose, epoch, step, row, col / 4)) >= p, and kept
// values are scaled by 1 / (1 - p). The mask is a pure function of those counters, so backward
// recomputes it instead of storing it, and host twins and kernels draw the very same bits.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/host_device.h"
#include "core/rng.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

struct DropoutSpec {
  float p = 0.f;  // drop probability in [0, 1); 0 turns dropout off (epoch may then be null)
  uint64_t seed = 0;
  Purpose purpose = Purpose::DropoutLoss;
  // Read when the op runs, never at capture: a replayed graph draws fresh masks once the epoch
  // counter in memory moves on. Device pointer for *_cuda ops, host pointer for *_host ops.
  const uint32_t* epoch = nullptr;
  uint32_t step = 0;  // rollout step t (a frozen kernel argument is fine: t is the same every epoch)
};

// Throws std::invalid_argument unless 0 <= p < 1 and, when p > 0, an epoch pointer is given.
inline void check_dropout(const DropoutSpec& s, const char* op) {
  if (!(s.p >= 0.f && s.p < 1.f))
    throw std::invalid_argument(std::string(op) + ": dropout p must be in [0, 1), got " + std::to_string(s.p));
  if (s.p > 0.f && s.epoch == nullptr)
    throw std::invalid_argument(std::string(op) + ": dropout with p > 0 needs an epoch pointer");
}

// 1 / (1 - p) in float, the same division on host and device (IEEE, round to nearest).
GRPO_HD float dropout_scale(float p) { return 1.f / (1.f - p); }

// The keep test bits_to_uniform(b) >= p in integers: u = (b >> 8) 2^-24, so u >= p exactly when
// (b >> 8) >= p 2^24 (exact: a power of two scales p), that is when b >= ceil(p 2^24) 2^8, which
// fits 32 bits for p < 1. The same mask bit for bit, without a conversion to float and a
// multiplication for each word (the conversion runs at a quarter of the FMA rate on a GPU).
GRPO_HD uint32_t dropout_threshold(float p) { return uint32_t(ceilf(p * 0x1p24f)) << 8; }

// Keep bits of columns 4*group .. 4*group+3 of `row` (bit k for column 4*group + k): one Philox
// call serves four neighbouring columns, which is also what a float4 access touches.
GRPO_HD unsigned dropout_keep4(float p, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t step, uint32_t row,
                               uint32_t group) {
  if (p == 0.f) return 0xFu;  // every u >= 0: skip the draw
  const Bits4 b = draw4(seed, purpose, epoch, step, row, group);
  const uint32_t at_least = dropout_threshold(p);
  return unsigned(b.x >= at_least) | unsigned(b.y >= at_least) << 1 | unsigned(b.z >= at_least) << 2 |
         unsigned(b.w >= at_least) << 3;
}

// Whether element (row, col) is kept. `epoch` is the value, already read through spec.epoch.
GRPO_HD bool dropout_keep(float p, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t step, uint32_t row,
                          uint32_t col) {
  return (dropout_keep4(p, seed, purpose, epoch, step, row, col / 4) >> (col % 4)) & 1u;
}

// y[M,N] = dropout(x) (in place allowed). The same op is its own backward: dx = dropout(dy)
// with the same spec. The engine normally uses the fused bias_gelu_dropout_* ops (gelu.h).
void dropout_apply_host(const float* x, float* y, int M, int N, const DropoutSpec& spec);
#if defined(GRPO_HAVE_CUDA)
void dropout_apply_cuda(const float* x, float* y, int M, int N, const DropoutSpec& spec, cudaStream_t stream);
#endif

}  // namespace grpo
