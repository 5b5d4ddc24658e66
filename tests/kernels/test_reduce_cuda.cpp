// Deterministic means on the device vs their host twins, and a warp's sums of several values at
// once (warp_sums_spread) against the same tree on the host.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/reduce.h"
#include "kernels/reduce_check.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;

TEST(ReduceCuda, MeanF32MatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  for (int n : {1, 37, 1003, 70001}) {
    const auto x = test::random_floats(n, 500 + n, -3.f, 5.f);
    float want;
    mean_f32_host(x.data(), n, &want, nullptr);
    DeviceBuffer<float> dx(x), scratch(test::poisoned(mean_scratch_floats(n)));
    DeviceBuffer<float> out(test::poisoned(2));
    mean_f32_cuda(dx.get(), n, out.get(), scratch.get(), nullptr);
    mean_f32_cuda(dx.get(), n, out.get() + 1, scratch.get(), nullptr);
    const auto got = out.download();
    EXPECT_LE(std::fabs(got[0] - want), 1e-5 * std::fabs(want) + 1e-7) << "n=" << n;
    EXPECT_EQ(std::memcmp(&got[0], &got[1], sizeof(float)), 0) << "n=" << n;
  }
}

TEST(ReduceCuda, MeanI32IsExact) {
  GRPO_REQUIRE_DEVICE();
  std::mt19937 gen(11);
  std::uniform_int_distribution<int32_t> d(-40, 250);
  for (int n : {1, 5, 1003, 70001}) {
    std::vector<int32_t> x(n);
    for (auto& v : x) v = d(gen);
    float want;
    mean_i32_host(x.data(), n, &want, nullptr);
    DeviceBuffer<int32_t> dx(x);
    DeviceBuffer<float> scratch(test::poisoned(mean_scratch_floats(n))), out(test::poisoned(1));
    mean_i32_cuda(dx.get(), n, out.get(), scratch.get(), nullptr);
    EXPECT_EQ(out.download()[0], want) << "n=" << n;
  }
}

// Every lane's sum is the host tree's bit for bit (values of mixed magnitudes, so that another
// order of the additions shows), equal in the lanes that share a value, near the exact sum of
// its value, and 0 for the padding past V.
TEST(ReduceCuda, WarpSumsSpreadIsTheFixedTree) {
  GRPO_REQUIRE_DEVICE();
  std::mt19937 gen(std::random_device{}());
  std::uniform_real_distribution<float> mant(-1.f, 1.f);
  std::uniform_int_distribution<int> expo(-12, 12);
  for (unsigned V = 1; V <= kSpreadCheckMaxValues; ++V) {
    std::vector<float> in(32 * V);
    for (float& x : in) x = std::ldexp(mant(gen), expo(gen));
    DeviceBuffer<float> din(in), dout(test::poisoned(32));
    warp_sums_spread_cuda(din.get(), dout.get(), V, nullptr);
    const std::vector<float> got = dout.download(), want = warp_sums_spread_host(in, V);
    unsigned P = 1;
    while (P < V) P *= 2;
    const unsigned L = 32 / P;
    for (unsigned l = 0; l < 32; ++l) {
      SCOPED_TRACE(::testing::Message() << V << " values, lane " << l);
      EXPECT_EQ(std::memcmp(&got[l], &want[l], sizeof(float)), 0) << got[l] << " against the tree's " << want[l];
      EXPECT_EQ(std::memcmp(&got[l], &got[l - l % L], sizeof(float)), 0) << "lanes of one value differ";
      const unsigned x = l / L;
      if (x >= V) {
        EXPECT_EQ(got[l], 0.f);
        continue;
      }
      double exact = 0, magnitude = 0;
      for (unsigned k = 0; k < 32; ++k) exact += in[k * V + x], magnitude += std::fabs(in[k * V + x]);
      EXPECT_NEAR(got[l], exact, 1e-6 * magnitude);
    }
  }
  EXPECT_THROW(warp_sums_spread_cuda(nullptr, nullptr, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(warp_sums_spread_cuda(nullptr, nullptr, kSpreadCheckMaxValues + 1, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
