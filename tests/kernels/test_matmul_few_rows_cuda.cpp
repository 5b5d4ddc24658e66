// The few-row product (kernels/matmul_few_rows.cu) against the host twin (OpenBLAS): ragged
// tiles in every dimension, with and without bias, nothing written outside Y (a poisoned guard
// after it), the bits of its documented sum (kernels/few_rows.h: an fmaf chain a tile of k, the
// tiles' sums added in order, then the bias: the cluster rollout's product relies on it), the
// same bits on every call, and linear_forward_cuda taking it exactly where
// linear_forward_takes_few_rows says. Fresh inputs each run; the seed is printed on failure.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct Shape {
  int M, N, K;
};

TEST(MatmulFewRowsCuda, MatchesHostWithRaggedTilesAndWritesOnlyY) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  uint64_t s = seed;
  // Small, because the emulator runs every shared-memory access through its checks: ragged in
  // rows (19: a partial tile of 16), columns (33, 35) and the sum (40, 70: a partial chunk of 128;
  // 300: two whole chunks, each loaded while the one before is summed, and a partial one).
  const Shape shapes[] = {{19, 33, 40}, {17, 35, 70}, {1, 32, 32}, {5, 3, 7}, {9, 33, 300}};
  for (const Shape& sh : shapes) {
    const auto X = random_floats(size_t(sh.M) * sh.K, ++s), W = random_floats(size_t(sh.N) * sh.K, ++s);
    const auto b = random_floats(sh.N, ++s);
    DeviceBuffer<float> dX(X), dW(W), db(b);
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << sh.M << "x" << sh.N << "x" << sh.K << " bias " << with_bias);
      std::vector<float> want(size_t(sh.M) * sh.N);
      linear_forward_host(X.data(), W.data(), with_bias ? b.data() : nullptr, want.data(), sh.M, sh.N, sh.K);
      const size_t guard = 64;
      DeviceBuffer<float> dY(poisoned(want.size() + guard));
      linear_forward_few_rows_cuda(dX.get(), dW.get(), with_bias ? db.get() : nullptr, dY.get(), sh.M, sh.N, sh.K,
                                   nullptr);
      const auto got = dY.download();
      const std::vector<float> y(got.begin(), got.begin() + long(want.size()));
      EXPECT_TRUE(all_close(y, want));
      EXPECT_LE(rel_l2(y, want), 1e-5);
      std::vector<float> chain(want.size());
      for (int m = 0; m < sh.M; ++m)
        for (int n = 0; n < sh.N; ++n) {
          float acc = 0.f;
          for (int k0 = 0; k0 < sh.K; k0 += kFewRowsSumTile) {
            float part = 0.f;
            for (int k = k0; k < std::min(sh.K, k0 + kFewRowsSumTile); ++k)
              part = std::fmaf(X[size_t(m) * sh.K + k], W[size_t(n) * sh.K + k], part);
            acc += part;
          }
          chain[size_t(m) * sh.N + n] = acc + (with_bias ? b[n] : 0.f);
        }
      EXPECT_EQ(std::memcmp(y.data(), chain.data(), y.size() * sizeof(float)), 0)
          << "not the documented sum (an fmaf chain a tile of k, the tiles added in order)";
      for (size_t i = want.size(); i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i])) << "wrote past Y at " << i;
      if (&sh != &shapes[0]) continue;
      linear_forward_few_rows_cuda(dX.get(), dW.get(), with_bias ? db.get() : nullptr, dY.get(), sh.M, sh.N, sh.K,
                                   nullptr);
      EXPECT_EQ(std::memcmp(dY.download().data(), got.data(), got.size() * sizeof(float)), 0)
          << "a second call gave other bits";
    }
  }
}

TEST(MatmulFewRowsCuda, LinearForwardTakesItExactlyWhereItSays) {
  GRPO_REQUIRE_DEVICE();
  EXPECT_TRUE(linear_forward_takes_few_rows(136, 512, 512, false));  // the small preset's rollout fc1
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 512, 512, true));  // TF32 stays on cuBLASLt
  EXPECT_FALSE(linear_forward_takes_few_rows(544, 2048, 2048, false));
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 2048, 2048, false));  // the reference's games on four streams
  EXPECT_TRUE(linear_forward_takes_few_rows(136, 1024, 1024, false));
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 1025, 512, false));
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 512, 1025, false));
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 3, 512, false));   // fc_out: three outputs
  EXPECT_FALSE(linear_forward_takes_few_rows(136, 512, 10, false));  // fc_in: ten inputs
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (const Shape sh : {Shape{20, 32, 40}, Shape{300, 32, 40}, Shape{20, 1040, 40}, Shape{20, 32, 1040}}) {
    Blas blas;  // fresh: it has run a cuBLASLt product (last_algorithm answers) only if this shape took one
    DeviceBuffer<float> dX(random_floats(size_t(sh.M) * sh.K, seed)), dW(random_floats(size_t(sh.N) * sh.K, seed + 1));
    DeviceBuffer<float> viaLinear(poisoned(size_t(sh.M) * sh.N)), direct(poisoned(size_t(sh.M) * sh.N));
    linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, viaLinear.get(), sh.M, sh.N, sh.K, nullptr);
    linear_forward_few_rows_cuda(dX.get(), dW.get(), nullptr, direct.get(), sh.M, sh.N, sh.K, nullptr);
    bool took_cublas = true;
    try {
      (void)blas.last_algorithm();
    } catch (const std::logic_error&) {
      took_cublas = false;
    }
    EXPECT_EQ(took_cublas, !linear_forward_takes_few_rows(sh.M, sh.N, sh.K, false)) << sh.M << " rows";
    // Bits in one direction only: a GPU's fp32 cuBLASLt kernel may sum each output in the few-row
    // kernel's fmaf order and so give its bits too (the emulator's model never does).
    if (!took_cublas) {
      EXPECT_EQ(viaLinear.download(), direct.download()) << sh.M << " rows";
    }
    EXPECT_LE(rel_l2(viaLinear.download(), direct.download()), 1e-5);
  }
}

// The bf16 variant (--precision bf16): the bf16 host twin on the same operands, ragged tiles,
// nothing past Y, and linear_forward_bf16_cuda taking it where the fp32 rule says.
TEST(MatmulFewRowsCuda, Bf16MatchesItsHostTwinAndLinearForwardTakesIt) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  uint64_t s = seed;
  auto bf16 = [](const std::vector<float>& x) {
    std::vector<Bf16> b(x.size());
    to_bf16_host(x.data(), b.data(), x.size());
    return b;
  };
  Blas blas(BlasOptions{Precision::Bf16});
  for (const Shape& sh : {Shape{19, 33, 40}, Shape{1, 32, 32}, Shape{300, 32, 40}}) {  // ragged, one row, cuBLASLt
    SCOPED_TRACE(::testing::Message() << sh.M << "x" << sh.N << "x" << sh.K);
    const auto X = bf16(random_floats(size_t(sh.M) * sh.K, ++s)), W = bf16(random_floats(size_t(sh.N) * sh.K, ++s));
    const auto b = random_floats(sh.N, ++s);
    DeviceBuffer<Bf16> dX(X), dW(W);
    DeviceBuffer<float> db(b);
    std::vector<float> want(size_t(sh.M) * sh.N);
    linear_forward_bf16_host(X.data(), W.data(), b.data(), want.data(), sh.M, sh.N, sh.K);
    const size_t guard = 64;
    DeviceBuffer<float> direct(poisoned(want.size() + guard)), viaLinear(poisoned(want.size()));
    linear_forward_few_rows_bf16_cuda(dX.get(), dW.get(), db.get(), direct.get(), sh.M, sh.N, sh.K, nullptr);
    linear_forward_bf16_cuda(blas, dX.get(), dW.get(), db.get(), viaLinear.get(), sh.M, sh.N, sh.K, nullptr);
    const auto got = direct.download();
    const std::vector<float> y(got.begin(), got.begin() + long(want.size()));
    EXPECT_TRUE(all_close(y, want));
    EXPECT_LE(rel_l2(y, want), 1e-5);
    for (size_t i = want.size(); i < got.size(); ++i) ASSERT_TRUE(std::isnan(got[i])) << "wrote past Y at " << i;
    // One direction only: a product of two bf16 values is exact, so cuBLASLt's sequential order
    // may give the few-row kernel's bits too.
    if (linear_forward_takes_few_rows(sh.M, sh.N, sh.K, false)) {
      EXPECT_EQ(viaLinear.download(), y);
    }
    EXPECT_LE(rel_l2(viaLinear.download(), want), 1e-5);
  }
}

}  // namespace
}  // namespace grpo::test
