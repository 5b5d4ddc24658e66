// core/mma.cuh where the kernels run: mma_tiles_cuda (one tensor-core product a warp, fragments
// as the PTX ISA lays them out) against its host twin. On the emulator, whose products are the
// twin's fmaf chains, bit for bit; on a GPU within a few units in the last place of the terms'
// magnitudes, since the tensor cores round their sums their own way: a fragment in the wrong place
// is off by whole terms, a million times more. The first test of the emulator's mma model on
// hardware, apart from the cluster kernel that uses it.
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/mma_check.h"
#include "tests/test_util.h"

#if defined(GRPO_SIMT)
namespace simt {
uint64_t mma_products();  // simt/simt.h
}
#endif

namespace grpo {
namespace {

TEST(MmaCuda, EachWarpsTileIsTheProductOfItsFragments) {
  GRPO_REQUIRE_DEVICE();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major < 8) GTEST_SKIP() << "needs bf16 tensor cores (sm_80 or newer), this device is sm_" << prop.major;
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  // bf16 of both signs over a 2^14 range of magnitudes, so that the sums cancel and their order matters.
  std::uniform_int_distribution<int> exponent(120, 134), sign(0, 1), mantissa(0, 127);
  const auto draw = [&] { return Bf16{uint16_t(sign(rng) << 15 | exponent(rng) << 7 | mantissa(rng))}; };
  for (const int warps : {1, 3, kMmaCheckMaxWarps}) {
    SCOPED_TRACE(::testing::Message() << warps << " warps");
    std::vector<Bf16> a(256 * size_t(warps)), b(128 * size_t(warps));
    std::vector<float> c(128 * size_t(warps)), want(c.size());
    for (auto& x : a) x = draw();
    for (auto& x : b) x = draw();
    for (auto& x : c) x = to_float(draw()) * 3.f;
    mma_tiles_host(a.data(), b.data(), c.data(), want.data(), warps);
    test::DeviceBuffer<Bf16> da(a), db(b);
    test::DeviceBuffer<float> dc(c), dd(std::vector<float>(c.size(), std::nanf("")));  // poisoned
#if defined(GRPO_SIMT)
    const uint64_t before = simt::mma_products();
#endif
    mma_tiles_cuda(da.get(), db.get(), dc.get(), dd.get(), warps, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = dd.download();
#if defined(GRPO_SIMT)
    EXPECT_EQ(simt::mma_products() - before, uint64_t(warps));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
#else
    for (int w = 0; w < warps; ++w)
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
          const size_t o = 128 * size_t(w) + i * 8 + j;
          double magnitude = std::fabs(c[o]);
          for (int k = 0; k < 16; ++k)
            magnitude += std::fabs(double(to_float(a[256 * w + i * 16 + k])) * to_float(b[128 * w + j * 16 + k]));
          ASSERT_NEAR(got[o], want[o], 1e-5 * magnitude) << "warp " << w << ", D[" << i << "][" << j << "]";
        }
#endif
  }
}

TEST(MmaCuda, RefusesAWarpCountOutsideItsRange) {
  EXPECT_THROW(mma_tiles_cuda(nullptr, nullptr, nullptr, nullptr, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(mma_tiles_cuda(nullptr, nullptr, nullptr, nullptr, kMmaCheckMaxWarps + 1, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace grpo
