// kernels/bf16.h's cast and matmul.h's bf16 products on the device (cuBLASLt's bf16 tensor
// cores, or the emulator's shim) against their host twins.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

std::vector<Bf16> to_bf16(const std::vector<float>& x) {
  std::vector<Bf16> b(x.size());
  to_bf16_host(x.data(), b.data(), x.size());
  return b;
}

TEST(Bf16Cuda, CastMatchesHostBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 100;
  for (size_t n : {size_t(1), size_t(3), size_t(4), size_t(1023), size_t(4096), size_t(70001)}) {
    // Wide values (bf16 keeps fp32's range), a NaN and an infinity among them.
    auto x = random_floats(n, ++seed, -3e38f, 3e38f);
    if (n > 3) x[1] = test::poison_value(), x[2] = -std::numeric_limits<float>::infinity();
    const auto want = to_bf16(x);
    // Offsets of 1 misalign both arrays: the scalar path.
    for (size_t offset : {size_t(0), size_t(1)}) {
      std::vector<float> padded(offset, 0.f);
      padded.insert(padded.end(), x.begin(), x.end());
      DeviceBuffer<float> dpx(padded);
      DeviceBuffer<Bf16> dy(std::vector<Bf16>(n + offset + 1, Bf16{0xdead}));
      to_bf16_cuda(dpx.get() + offset, dy.get() + offset, n, nullptr);
      const auto got = dy.download();
      // A NaN's payload is to_bf16's on the scalar path and the emulator, the hardware's on a GPU's
      // vector path (kernels/bf16.h, to_bf16x2): only that it stays a NaN is asked of it.
      for (size_t i = 0; i < n; ++i)
        if (std::isnan(x[i]))
          ASSERT_TRUE(std::isnan(to_float(got[offset + i]))) << n << " @" << i;
        else
          ASSERT_EQ(got[offset + i].bits, want[i].bits) << n << " @" << i;
      EXPECT_EQ(got[offset + n].bits, 0xdead) << "wrote past the end, n " << n;
      if (offset) {
        EXPECT_EQ(got[0].bits, 0xdead) << "wrote before the start, n " << n;
      }
    }
  }
}

struct Shape {
  int M, N, K;
};
// cuBLASLt's small and odd shapes, and the small preset's rollout product (136 games, H 64 here).
const Shape kShapes[] = {{37, 23, 19}, {64, 128, 20}, {300, 40, 33}, {136, 64, 64}, {2, 1, 1}};

TEST(Bf16Cuda, ProductsMatchTheirHostTwins) {
  GRPO_REQUIRE_DEVICE();
  Blas blas(BlasOptions{Precision::Bf16});
  uint64_t seed = 200;
  for (const Shape& s : kShapes) {
    const auto xf = random_floats(size_t(s.M) * s.K, ++seed), wf = random_floats(size_t(s.N) * s.K, ++seed);
    const auto dyf = random_floats(size_t(s.M) * s.N, ++seed), bias = random_floats(s.N, ++seed);
    const auto old = random_floats(size_t(s.N) * s.K, ++seed);
    const auto x = to_bf16(xf), w = to_bf16(wf), dy = to_bf16(dyf);
    DeviceBuffer<Bf16> dx_in(x), dw_in(w), ddy(dy);
    DeviceBuffer<float> db(bias);
    const std::string at = std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);

    std::vector<float> want(size_t(s.M) * s.N), fp32(want.size());
    linear_forward_bf16_host(x.data(), w.data(), bias.data(), want.data(), s.M, s.N, s.K);
    linear_forward_host(xf.data(), wf.data(), bias.data(), fp32.data(), s.M, s.N, s.K);
    DeviceBuffer<float> y(poisoned(want.size()));
    linear_forward_bf16_cuda(blas, dx_in.get(), dw_in.get(), db.get(), y.get(), s.M, s.N, s.K, nullptr);
    const auto got = y.download();
    EXPECT_LE(rel_l2(got, want), 1e-5) << at;
    // The operands really were bf16: the fp32 product is ~2^-9 relative away (not for K = 1).
    if (s.K > 1) {
      EXPECT_GE(rel_l2(got, fp32), 1e-4) << at;
    }

    std::vector<float> want_dx(size_t(s.M) * s.K);
    linear_backward_input_bf16_host(dy.data(), w.data(), want_dx.data(), s.M, s.N, s.K);
    DeviceBuffer<float> dx(poisoned(want_dx.size()));
    linear_backward_input_bf16_cuda(blas, ddy.get(), dw_in.get(), dx.get(), s.M, s.N, s.K, nullptr);
    EXPECT_LE(rel_l2(dx.download(), want_dx), 1e-5) << at;

    for (bool accumulate : {false, true}) {
      auto want_dw = accumulate ? old : std::vector<float>(old.size());
      linear_backward_weight_bf16_host(dy.data(), x.data(), want_dw.data(), s.M, s.N, s.K, accumulate);
      DeviceBuffer<float> dw(accumulate ? old : poisoned(old.size()));
      linear_backward_weight_bf16_cuda(blas, ddy.get(), dx_in.get(), dw.get(), s.M, s.N, s.K, accumulate, nullptr);
      EXPECT_LE(rel_l2(dw.download(), want_dw), 1e-5) << at << " acc " << accumulate;
    }
  }
}

TEST(Bf16Cuda, EmptyProductsWriteWhatTheyMust) {
  GRPO_REQUIRE_DEVICE();
  Blas blas(BlasOptions{Precision::Bf16});
  DeviceBuffer<Bf16> a(std::vector<Bf16>(8, Bf16{0x3f80})), b(std::vector<Bf16>(8, Bf16{0x3f80}));
  DeviceBuffer<float> dw(poisoned(4 * 2));
  linear_backward_weight_bf16_cuda(blas, a.get(), b.get(), dw.get(), 0, 4, 2, false, nullptr);
  EXPECT_EQ(dw.download(), std::vector<float>(8, 0.f));  // an empty sum
  DeviceBuffer<float> y(poisoned(4));
  linear_forward_bf16_cuda(blas, a.get(), b.get(), nullptr, y.get(), 0, 4, 2, nullptr);
  EXPECT_TRUE(std::isnan(y.download()[0]));  // nothing to write
}

}  // namespace
}  // namespace grpo
