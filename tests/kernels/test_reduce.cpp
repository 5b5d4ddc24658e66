// Host twins of the deterministic means vs naive double sums.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/reduce.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::random_floats;

TEST(Reduce, BlocksDependOnSizeOnlyAndStayInOneFinalBlock) {
  EXPECT_EQ(reduce_blocks(1), 1u);
  EXPECT_EQ(reduce_blocks(kReduceThreads), 1u);
  EXPECT_EQ(reduce_blocks(kReduceThreads + 1), 2u);
  EXPECT_EQ(reduce_blocks(size_t{1} << 30), kReduceMaxBlocks);
  EXPECT_EQ(mean_scratch_floats(1000), reduce_blocks(1000));
}

TEST(Reduce, MeanF32HostMatchesDouble) {
  for (int n : {1, 37, 1003, 70001}) {
    // A large offset: a float running sum would drift, the twin's double sum must not.
    const auto x = random_floats(n, 100 + n, 999.f, 1001.f);
    double ref = 0;
    for (float v : x) ref += v;
    ref /= n;
    float got = test::poison_value();
    mean_f32_host(x.data(), n, &got, nullptr);
    EXPECT_NEAR(got, ref, 1e-6 * std::fabs(ref)) << "n=" << n;
  }
}

TEST(Reduce, MeanI32HostIsExact) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int32_t> d(-50, 300);
  for (int n : {1, 5, 1003, 70001}) {
    std::vector<int32_t> x(n);
    int64_t s = 0;
    for (auto& v : x) s += (v = d(gen));
    float got = test::poison_value();
    mean_i32_host(x.data(), n, &got, nullptr);
    EXPECT_EQ(got, static_cast<float>(static_cast<double>(s) / n)) << "n=" << n;
  }
}

TEST(Reduce, RejectsEmptyInput) {
  float out = 0, x = 1;
  int32_t xi = 1;
  EXPECT_THROW(mean_f32_host(&x, 0, &out, nullptr), std::invalid_argument);
  EXPECT_THROW(mean_i32_host(&xi, -1, &out, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
