// Self-tests of the emulator's warp-level bf16 product (simt/mma.cpp, core/mma.cuh): three warps,
// each with its own random tiles, against D = A B + C summed here as fmaf chains over k ascending,
// bit for bit, counted by simt::mma_products; a lane that skips the product, or lanes at two
// call sites of it, abort with a report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
uint64_t mma_products();
}

namespace {

using grpo::test::DeviceBuffer;

float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(SimtMma, EachWarpsTileIsTheProductOfItsFragments) {
  constexpr int kWarps = 3;
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exponent(120, 134), bit(0, 1);
  std::uniform_int_distribution<uint16_t> mantissa(0, 127);
  // bf16 of both signs over a 2^15 range of magnitudes, so that the order of the sums matters.
  const auto draw = [&] { return uint16_t(bit(rng) << 15 | exponent(rng) << 7 | mantissa(rng)); };
  std::vector<uint16_t> a(256 * kWarps), b(128 * kWarps);
  std::vector<float> c(128 * kWarps);
  for (auto& x : a) x = draw();
  for (auto& x : b) x = draw();
  for (auto& x : c) x = bf16_value(draw()) * 3.f;
  DeviceBuffer<uint16_t> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(std::vector<float>(c.size(), std::nanf("")));
  const uint64_t before = simt::mma_products();
  ASSERT_EQ(simt_test::mma_tiles(da.get(), db.get(), dc.get(), dd.get(), kWarps), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(simt::mma_products() - before, uint64_t(kWarps));
  const std::vector<float> d = dd.download();
  for (int w = 0; w < kWarps; ++w)
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        float want = c[128 * w + i * 8 + j];
        for (int k = 0; k < 16; ++k)
          want = std::fmaf(bf16_value(a[256 * w + i * 16 + k]), bf16_value(b[128 * w + j * 16 + k]), want);
        ASSERT_EQ(d[128 * w + i * 8 + j], want) << "warp " << w << ", D[" << i << "][" << j << "]";
      }
}

TEST(SimtMma, ALaneThatSkipsTheProductAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<float> d(32);
        simt_test::mma_one_lane_skips(d.get());
        cudaDeviceSynchronize();
      },
      "exited while(.|\n)*mma.sync(.|\n)*SIMT_SEED=");
}

TEST(SimtMma, LanesAtTwoCallSitesAbort) {
  EXPECT_DEATH(
      {
        DeviceBuffer<float> d(32);
        simt_test::mma_two_sites(d.get());
        cudaDeviceSynchronize();
      },
      "warp collective mismatch(.|\n)*mma.sync(.|\n)*SIMT_SEED=");
}

}  // namespace
