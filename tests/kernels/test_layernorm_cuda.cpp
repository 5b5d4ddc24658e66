// LayerNorm with residual on the device against the host twins, in both layouts (a warp per
// row up to N = 1024, a block per row above) and both access paths (float4 and scalar).
#include <cstring>
#include <vector>

#include "kernels/layernorm.h"
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
  size_t offset;  // 1 misaligns the [M, N] tensors: the scalar path
};
const Case kCases[] = {{13, 8, 0},   {9, 37, 0},   {10, 100, 0}, {10, 100, 1},
                       {3, 1024, 0}, {3, 1100, 0}, {2, 1037, 0}, {2, 8192, 0}};

std::vector<float> tail(const std::vector<float>& v, size_t offset) { return {v.begin() + offset, v.end()}; }

TEST(LayerNormCuda, ForwardMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 7000;
  for (const Case& c : kCases) {
    const size_t n = size_t(c.M) * c.N;
    const auto h0 = random_floats(n + c.offset, ++seed, -1.f, 3.f);
    const auto gamma = random_floats(c.N, ++seed, 0.5f, 1.5f), beta = random_floats(c.N, ++seed);
    std::vector<float> h1(n), mean(c.M), rstd(c.M);
    layernorm_residual_forward_host(h0.data() + c.offset, gamma.data(), beta.data(), h1.data(), mean.data(),
                                    rstd.data(), c.M, c.N);
    DeviceBuffer<float> dh0(h0), dg(gamma), db(beta), dh1(poisoned(n + c.offset)), dm(poisoned(c.M)), dr(poisoned(c.M));
    layernorm_residual_forward_cuda(dh0.get() + c.offset, dg.get(), db.get(), dh1.get() + c.offset, dm.get(), dr.get(),
                                    c.M, c.N, nullptr);
    EXPECT_TRUE(all_close(tail(dh1.download(), c.offset), h1)) << c.M << "x" << c.N << " offset " << c.offset;
    EXPECT_TRUE(all_close(dm.download(), mean)) << c.M << "x" << c.N;
    EXPECT_TRUE(all_close(dr.download(), rstd)) << c.M << "x" << c.N;
  }
}

TEST(LayerNormCuda, BackwardMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 8000;
  for (const Case& c : kCases) {
    const size_t n = size_t(c.M) * c.N;
    const auto h0 = random_floats(n + c.offset, ++seed, -1.f, 3.f), dh1 = random_floats(n + c.offset, ++seed);
    const auto gamma = random_floats(c.N, ++seed, 0.5f, 1.5f), beta = random_floats(c.N, ++seed);
    std::vector<float> h1(n), mean(c.M), rstd(c.M), want_dh0(n), want_dg(c.N), want_db(c.N);
    layernorm_residual_forward_host(h0.data() + c.offset, gamma.data(), beta.data(), h1.data(), mean.data(),
                                    rstd.data(), c.M, c.N);
    layernorm_residual_backward_host(dh1.data() + c.offset, h0.data() + c.offset, gamma.data(), mean.data(),
                                     rstd.data(), want_dh0.data(), want_dg.data(), want_db.data(), c.M, c.N, nullptr);
    DeviceBuffer<float> ddh1(dh1), dh0(h0), dg(gamma), dm(mean), dr(rstd), ddh0(poisoned(n + c.offset));
    DeviceBuffer<float> ddg(poisoned(2 * size_t(c.N))), ddb(poisoned(2 * size_t(c.N)));
    DeviceBuffer<float> scratch(poisoned(layernorm_residual_backward_scratch_floats(c.M, c.N)));
    for (int rep = 0; rep < 2; ++rep)
      layernorm_residual_backward_cuda(ddh1.get() + c.offset, dh0.get() + c.offset, dg.get(), dm.get(), dr.get(),
                                       ddh0.get() + c.offset, ddg.get() + rep * c.N, ddb.get() + rep * c.N, c.M, c.N,
                                       scratch.get(), nullptr);
    const auto got_dg = ddg.download(), got_db = ddb.download();
    EXPECT_TRUE(all_close(tail(ddh0.download(), c.offset), want_dh0)) << c.M << "x" << c.N;
    EXPECT_LE(rel_l2(std::vector<float>(got_dg.begin(), got_dg.begin() + c.N), want_dg), 1e-5) << c.M << "x" << c.N;
    EXPECT_LE(rel_l2(std::vector<float>(got_db.begin(), got_db.begin() + c.N), want_db), 1e-5) << c.M << "x" << c.N;
    EXPECT_EQ(std::memcmp(got_dg.data(), got_dg.data() + c.N, c.N * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(got_db.data(), got_db.data() + c.N, c.N * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace grpo
