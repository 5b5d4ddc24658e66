// Fused bias + GELU + dropout on the device against the host twins (gelu.h).
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/gelu.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct Case {
  int M, N;
  float p;
  size_t offset;  // elements added to the [M, N] pointers: 1 forces the scalar path
};
const Case kCases[] = {{37, 23, 0.1f, 0}, {19, 64, 0.1f, 0}, {19, 64, 0.3f, 1},
                       {70, 200, 0.f, 0}, {3, 131, 0.5f, 0}, {1, 3, 0.1f, 0}};

TEST(GeluCuda, ForwardMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 4000;
  for (const Case& c : kCases) {
    const size_t n = size_t(c.M) * c.N;
    const auto a = random_floats(n + c.offset, ++seed, -3.f, 3.f), b = random_floats(c.N, ++seed);
    const uint32_t epoch = 12;
    std::vector<float> want(n);
    bias_gelu_dropout_forward_host(a.data() + c.offset, b.data(), want.data(), c.M, c.N,
                                   {c.p, 77, Purpose::DropoutRollout, &epoch, 3});
    DeviceBuffer<float> da(a), db(b), dout(poisoned(n + c.offset));
    DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{epoch});
    bias_gelu_dropout_forward_cuda(da.get() + c.offset, db.get(), dout.get() + c.offset, c.M, c.N,
                                   {c.p, 77, Purpose::DropoutRollout, depoch.get(), 3}, nullptr);
    const auto got = dout.download();
    EXPECT_TRUE(all_close(std::vector<float>(got.begin() + c.offset, got.end()), want))
        << c.M << "x" << c.N << " p " << c.p << " offset " << c.offset;
  }
}

TEST(GeluCuda, BackwardMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 5000;
  for (const Case& c : kCases) {
    const size_t n = size_t(c.M) * c.N;
    const auto dout = random_floats(n + c.offset, ++seed), a = random_floats(n + c.offset, ++seed, -3.f, 3.f);
    const auto b = random_floats(c.N, ++seed);
    const uint32_t epoch = 3;
    std::vector<float> want_da(n), want_db(c.N);
    bias_gelu_dropout_backward_host(dout.data() + c.offset, a.data() + c.offset, b.data(), want_da.data(),
                                    want_db.data(), c.M, c.N, {c.p, 5, Purpose::DropoutLoss, &epoch, 0}, nullptr);
    DeviceBuffer<float> ddout(dout), da(a), db(b), dda(poisoned(n + c.offset)), ddb(poisoned(2 * size_t(c.N)));
    DeviceBuffer<float> scratch(poisoned(bias_gelu_dropout_backward_scratch_floats(c.M, c.N)));
    DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{epoch});
    const DropoutSpec spec{c.p, 5, Purpose::DropoutLoss, depoch.get(), 0};
    for (int rep = 0; rep < 2; ++rep)
      bias_gelu_dropout_backward_cuda(ddout.get() + c.offset, da.get() + c.offset, db.get(), dda.get() + c.offset,
                                      ddb.get() + rep * c.N, c.M, c.N, spec, scratch.get(), nullptr);
    const auto got_da = dda.download(), got_db = ddb.download();
    const std::vector<float> db0(got_db.begin(), got_db.begin() + c.N);
    EXPECT_TRUE(all_close(std::vector<float>(got_da.begin() + c.offset, got_da.end()), want_da))
        << c.M << "x" << c.N << " p " << c.p;
    EXPECT_LE(rel_l2(db0, want_db), 1e-5) << c.M << "x" << c.N << " p " << c.p;
    EXPECT_EQ(std::memcmp(got_db.data(), got_db.data() + c.N, c.N * sizeof(float)), 0);
  }
}

// The device's GELU (gelu.h: one exponential and one reciprocal, approximate on a GPU) over the
// whole range a layer can see, against the spec's tanh formula and its derivative in double:
// no NaN or infinity where x is very negative (the exponential's clamp), and the values within
// a few millionths relative wherever they are not tiny (__expf's error grows with its argument:
// up to ~2.5e-6 relative at 20, where gelu is ~1e-9). The emulator runs the host's formula.
TEST(GeluCuda, WideRangeMatchesDouble) {
  GRPO_REQUIRE_DEVICE();
  std::vector<float> x = random_floats(3000, 6001, -12.f, 12.f);
  const auto wide = random_floats(1000, 6002, -200.f, 200.f);
  x.insert(x.end(), wide.begin(), wide.end());
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-4f, -1e-4f, 0.5f, -0.5f, -0.75f, 30.f, -30.f, 1e4f, -1e4f})
    x.push_back(v);
  const int N = int(x.size());
  const std::vector<float> zero(size_t(N), 0.f), ones(size_t(N), 1.f);
  std::vector<float> want(x.size()), want_grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], c = std::sqrt(2 / M_PI), t = std::tanh(c * (v + 0.044715 * v * v * v));
    want[i] = float(0.5 * v * (1 + t));
    want_grad[i] = float(0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v));
  }
  const uint32_t epoch = 0;
  DeviceBuffer<float> da(x), dbias(zero), dout(poisoned(x.size())), dones(ones), dda(poisoned(x.size()));
  DeviceBuffer<float> ddbias(poisoned(x.size()));
  DeviceBuffer<float> scratch(poisoned(bias_gelu_dropout_backward_scratch_floats(1, N)));
  DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{epoch});
  const DropoutSpec none{0.f, 1, Purpose::DropoutLoss, depoch.get(), 0};
  bias_gelu_dropout_forward_cuda(da.get(), dbias.get(), dout.get(), 1, N, none, nullptr);
  bias_gelu_dropout_backward_cuda(dones.get(), da.get(), dbias.get(), dda.get(), ddbias.get(), 1, N, none,
                                  scratch.get(), nullptr);
  const auto got = dout.download(), got_grad = dda.download();
  EXPECT_TRUE(all_close(got, want, 1e-7, 4e-6));
  // The derivative crosses 0 near x = -0.75, where its two terms cancel: an absolute bound there.
  EXPECT_TRUE(all_close(got_grad, want_grad, 5e-7, 4e-6));
}

}  // namespace
}  // namespace grpo
