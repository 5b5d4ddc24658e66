// Deterministic means on the device vs their host twins.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/reduce.h"
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

}  // namespace
}  // namespace grpo
