// Counter-based randomness shared by kernels and host twins (docs/design.md principle 4).
// Every draw is a pure function of (seed, purpose, epoch, step, index, block): no state is
// carried between kernels, so a replayed graph draws fresh numbers as soon as the epoch counter
// it reads from device memory moves on, and the host executor draws the very same bits.
//
// Layout of the Philox4x32-10 counter (cuRAND's curand_init(seed, subsequence, offset)):
//   subsequence = purpose << 56 | (epoch mod 2^24) << 32 | index      (index: game, row, ...)
//   offset      = 4 * (step << 32 | block)                              (block: 4 words each)
// Epochs wrap after 2^24 = 16.7M; blocks have 2^32 values; steps must stay below 2^30 (cuRAND
// takes the offset in 64 bits, so 4 * (step << 32) overflows from step 2^30 on and cuRAND and the
// written-out Philox below would part ways; T is a few hundred).
#pragma once
#include <cstdint>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <curand_kernel.h>
#endif

namespace grpo {

enum class Purpose : uint32_t {
  StartFruit = 1,      // x of each group's first fruit at the start of an epoch
  Spawn = 2,           // per game and step: the coin and the Fmax spawn x values
  Action = 3,          // per game and step: the uniform that samples the action
  DropoutRollout = 4,  // dropout masks while playing
  DropoutLoss = 5,     // dropout masks in the loss pass (independent of the rollout's)
  Init = 6,            // parameter initialisation
  RandomAgent = 7,     // per game and step: the random baseline's action (grpo eval --agent random)
};

struct Bits4 {
  uint32_t x, y, z, w;
};

// Philox4x32-10 written out, for the host-only flavour where curand_kernel.h is absent.
// Tests check it against cuRAND bit for bit wherever both exist.
GRPO_HD Bits4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
  }
  return {c0, c1, c2, c3};
}

GRPO_HD uint64_t rng_subsequence(Purpose p, uint32_t epoch, uint32_t index) {
  return (uint64_t{static_cast<uint32_t>(p)} << 56) | (uint64_t{epoch & 0xFFFFFFu} << 32) | index;
}

// Four 32-bit draws for (purpose, epoch, step, index), block `block` of that stream.
GRPO_HD Bits4 draw4(uint64_t seed, Purpose p, uint32_t epoch, uint32_t step, uint32_t index, uint32_t block = 0) {
  const uint64_t sub = rng_subsequence(p, epoch, index);
  const uint64_t blk = (uint64_t{step} << 32) | block;
  // cuRAND's functions are __device__-only under nvcc, so nvcc's host pass of this function
  // takes the written-out Philox (equal bit for bit; tests/kernels/test_rng.cpp checks it).
#if defined(GRPO_HAVE_CUDA) && (defined(__CUDA_ARCH__) || !defined(__CUDACC__))
  curandStatePhilox4_32_10_t s;
  curand_init(seed, sub, 4 * blk, &s);
  const uint4 r = curand4(&s);
  return {r.x, r.y, r.z, r.w};
#else
  return philox4x32_10(static_cast<uint32_t>(blk), static_cast<uint32_t>(blk >> 32), static_cast<uint32_t>(sub),
                       static_cast<uint32_t>(sub >> 32), static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32));
#endif
}

// Bits to a uniform in [0, 1), exactly: 24 bits times a power of two, no rounding anywhere.
GRPO_HD float bits_to_uniform(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1p-24f; }

// floor(u * n) for u = bits_to_uniform(bits), computed in integers so that it is exact for any n.
GRPO_HD uint32_t bits_to_index(uint32_t bits, uint32_t n) {
  return static_cast<uint32_t>((uint64_t{bits >> 8} * n) >> 24);
}

}  // namespace grpo
