// LayerNorm with residual on the device against the host twins, in both layouts (a warp per
// row up to N = 1024, a block per row above) and both access paths (float4 and scalar).
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/fc_in.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
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
    const auto got = tail(dh1.download(), c.offset);
    EXPECT_TRUE(all_close(got, h1)) << c.M << "x" << c.N << " offset " << c.offset;
    EXPECT_TRUE(all_close(dm.download(), mean)) << c.M << "x" << c.N;
    EXPECT_TRUE(all_close(dr.download(), rstd)) << c.M << "x" << c.N;
    // --precision bf16: h1 goes out as bf16 instead (offset 1 misaligns it as well), the
    // kernel's own h1 rounded, bit for bit, and the fp32 h1 is not written.
    DeviceBuffer<Bf16> d16(std::vector<Bf16>(n + c.offset + 1, Bf16{0xdead}));
    DeviceBuffer<float> untouched(poisoned(n + c.offset));
    layernorm_residual_forward_cuda(dh0.get() + c.offset, dg.get(), db.get(), untouched.get() + c.offset, dm.get(),
                                    dr.get(), c.M, c.N, nullptr, d16.get() + c.offset);
    for (float x : untouched.download()) ASSERT_TRUE(std::isnan(x)) << "h1 written beside its bf16 copy";
    EXPECT_TRUE(all_close(dm.download(), mean)) << c.M << "x" << c.N;
    const auto copy = d16.download();
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(copy[c.offset + i].bits, to_bf16(got[i]).bits) << c.M << "x" << c.N << " @" << i;
    EXPECT_EQ(copy[c.offset + n].bits, 0xdead) << "h1_bf16 written past its end";
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

// The fused input backward (dh0 never written) against its host twin, the composition: the
// backward above, then dW_in = dh0^T X, with h0 = X W_in^T in kernels/fc_in.h's order and the
// forward's statistics of that h0 (as training gives them). Where the one pass takes the shape
// (layernorm_onepass::fits_device: N <= 2048, D <= 10 on sm_90) it must not read h0, so h0 goes
// in poisoned there, and the h0 it recomputes must be fc_in's to the bit (its test output). One
// pass: teams of 32 (16 a block), 64, 128, 256 and 512 threads, a ragged row, the scalar path,
// D 1 and 7 (compiled for any D <= 10) and 10 (for exactly 10), 9000 rows (40 a chunk, rows past
// the chunk in the prefetch), the reference's width over 4 chunks. Two passes: N 2049 and 1100
// at D 25, both row layouts. Twice each, bit for bit.
TEST(LayerNormCuda, InputBackwardMatchesTheComposedHostOps) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t base = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << base);
  uint64_t seed = base;
  struct InCase {
    int M, N, D;
    size_t offset;
    size_t x_offset = 0;  // X one float past 8-byte alignment: the one pass stages an observation a float at a time
  };
  for (const InCase c : {InCase{13, 8, 1, 0}, InCase{9, 37, 10, 1}, InCase{150, 64, 10, 0}, InCase{6, 1100, 25, 0},
                         InCase{70, 40, 25, 0}, InCase{9000, 40, 10, 0}, InCase{37, 512, 10, 0},
                         InCase{11, 2048, 10, 0}, InCase{7, 1030, 7, 0}, InCase{5, 2049, 10, 0}, InCase{50, 200, 10, 0},
                         InCase{40, 1000, 10, 0}, InCase{100, 2048, 10, 0}, InCase{150, 64, 10, 0, 1}}) {
    SCOPED_TRACE(::testing::Message() << c.M << "x" << c.N << " D " << c.D << " offset " << c.offset << " X offset "
                                      << c.x_offset);
    const bool one_pass = layernorm_onepass::fits_device(c.N, c.D);
    const size_t n = size_t(c.M) * c.N;
    const auto X = random_floats(size_t(c.M) * c.D, ++seed, -1.f, 1.f);
    const auto w_in = random_floats(size_t(c.N) * c.D, ++seed, -1.f, 1.f);
    std::vector<float> h0(n + c.offset);
    fc_in_forward_host(X.data(), w_in.data(), h0.data() + c.offset, c.M, c.N, c.D);
    const auto dh1 = random_floats(n + c.offset, ++seed);
    const auto gamma = random_floats(c.N, ++seed, 0.5f, 1.5f), beta = random_floats(c.N, ++seed);
    std::vector<float> h1(n), mean(c.M), rstd(c.M), dh0(n), want_dg(c.N), want_db(c.N), want_dw(size_t(c.N) * c.D);
    layernorm_residual_forward_host(h0.data() + c.offset, gamma.data(), beta.data(), h1.data(), mean.data(),
                                    rstd.data(), c.M, c.N);
    layernorm_residual_backward_host(dh1.data() + c.offset, h0.data() + c.offset, gamma.data(), mean.data(),
                                     rstd.data(), dh0.data(), want_dg.data(), want_db.data(), c.M, c.N, nullptr);
    linear_backward_weight_host(dh0.data(), X.data(), want_dw.data(), c.M, c.N, c.D, false);
    std::vector<float> x_at(c.x_offset, test::poison_value());
    x_at.insert(x_at.end(), X.begin(), X.end());
    DeviceBuffer<float> ddh1(dh1), dh0_in(one_pass ? poisoned(n + c.offset) : h0), dx_at(x_at), dw_in(w_in), dg(gamma),
        dm(mean), dr(rstd);
    const float* dx = dx_at.get() + c.x_offset;
    DeviceBuffer<float> scratch(poisoned(layernorm_input_backward_scratch_floats(c.M, c.N, c.D)));
    std::vector<std::vector<float>> got[2];
    for (auto& g : got) {
      DeviceBuffer<float> ddg(poisoned(c.N)), ddb(poisoned(c.N)), ddw(poisoned(size_t(c.N) * c.D));
      layernorm_input_backward_cuda(ddh1.get() + c.offset, dh0_in.get() + c.offset, dx, dw_in.get(), dg.get(), dm.get(),
                                    dr.get(), ddg.get(), ddb.get(), ddw.get(), c.M, c.N, c.D, scratch.get(), nullptr);
      g = {ddg.download(), ddb.download(), ddw.download()};
    }
    EXPECT_LE(rel_l2(got[0][0], want_dg), 1e-5) << "dgamma";
    EXPECT_LE(rel_l2(got[0][1], want_db), 1e-5) << "dbeta";
    EXPECT_LE(rel_l2(got[0][2], want_dw), 1e-5) << "dW_in";
    EXPECT_TRUE(all_close(got[0][2], want_dw, 1e-4, 1e-3)) << "dW_in";
    EXPECT_EQ(got[0], got[1]) << "a second call gives the same bits";
    if (one_pass) {
      DeviceBuffer<float> h0_out(poisoned(n)), part(poisoned(layernorm_input_backward_partial_floats(c.M, c.N, c.D)));
      layernorm_onepass::partial_sums_cuda(ddh1.get() + c.offset, dx, dw_in.get(), dg.get(), dm.get(), dr.get(), c.M,
                                           c.N, c.D, part.get(), nullptr, h0_out.get());
      EXPECT_EQ(h0_out.download(), tail(h0, c.offset)) << "the recomputed h0 is not fc_in's";
    }
  }
}

// fc_in.weight transposed for the rollout: the host twin's bytes, zeros in the padding of each
// row (N 37: rows padded to 40), and nothing written past D rows.
TEST(FcInCuda, TransposeMatchesHostWithZeroPadding) {
  GRPO_REQUIRE_DEVICE();
  for (const auto& [N, D] : {std::pair{37, 10}, std::pair{512, 10}, std::pair{8, 1}}) {
    const auto W = random_floats(size_t(N) * D, uint64_t(N) * 100 + D);
    const size_t n = size_t(D) * fc_in_t_pitch(N);
    std::vector<float> want(n);
    fc_in_transpose_host(W.data(), want.data(), N, D);
    for (size_t d = 0; d < size_t(D); ++d)
      for (size_t c = 0; c < fc_in_t_pitch(N); ++c)
        ASSERT_EQ(want[d * fc_in_t_pitch(N) + c], c < size_t(N) ? W[c * D + d] : 0.f) << d << " " << c;
    DeviceBuffer<float> dw(W), dt(poisoned(n + 1));
    fc_in_transpose_cuda(dw.get(), dt.get(), N, D, nullptr);
    auto got = dt.download();
    EXPECT_TRUE(std::isnan(got.back())) << "written past the end";
    got.pop_back();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << N << " x " << D;
  }
  EXPECT_THROW(fc_in_transpose_cuda(nullptr, nullptr, 0, 10, nullptr), std::invalid_argument);
}

// No rows: zero sums from the one pass (a chunk of none), as from the two.
TEST(LayerNormCuda, InputBackwardOfNoRowsIsZero) {
  GRPO_REQUIRE_DEVICE();
  for (const int N : {512, 2049}) {
    const int D = 10;
    const auto w_in = random_floats(size_t(N) * D, 5), gamma = random_floats(N, 6);
    DeviceBuffer<float> dw_in(w_in), dg(gamma), one(std::vector<float>(1, 1.f));
    DeviceBuffer<float> scratch(poisoned(layernorm_input_backward_scratch_floats(0, N, D)));
    DeviceBuffer<float> ddg(poisoned(N)), ddb(poisoned(N)), ddw(poisoned(size_t(N) * D));
    layernorm_input_backward_cuda(one.get(), one.get(), one.get(), dw_in.get(), dg.get(), one.get(), one.get(),
                                  ddg.get(), ddb.get(), ddw.get(), 0, N, D, scratch.get(), nullptr);
    for (const auto& v : {ddg.download(), ddb.download(), ddw.download()})
      for (float x : v) ASSERT_EQ(x, 0.f) << "N " << N;
  }
}

TEST(LayerNormCuda, OnePassRefusesShapesItDoesNotTake) {
  GRPO_REQUIRE_DEVICE();
  for (const auto& [N, D] : {std::pair{2049, 10}, std::pair{0, 10}, std::pair{512, 11}, std::pair{512, 0}}) {
    EXPECT_THROW(layernorm_onepass::partial_sums_cuda(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, N, D,
                                                      nullptr, nullptr),
                 std::invalid_argument)
        << N << " " << D;
    EXPECT_FALSE(layernorm_onepass::fits_device(N, D)) << N << " " << D;
  }
  // An sm_90 block's shared memory (the emulated device's) holds the widest shape it takes.
  EXPECT_TRUE(layernorm_onepass::fits_device(2048, 10));
  EXPECT_TRUE(layernorm_onepass::fits_device(1, 1));
}

// fc_in's fixed order on the device: the host twin's bits (both are the same fmaf chain). Up to
// D 10 and 25 a thread keeps four columns' weights over a tile of 32 rows (tiles of 512 columns:
// 1030 is three, the last ragged; 70 rows are three tiles, the last partial); past 25, a thread
// an element.
TEST(FcInCuda, MatchesHostBitForBit) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t base = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << base);
  uint64_t seed = base;
  for (const auto& [M, N, D] : {std::tuple{1, 8, 1}, std::tuple{33, 37, 10}, std::tuple{5, 512, 25},
                                std::tuple{70, 1030, 10}, std::tuple{40, 600, 13}, std::tuple{3, 40, 26}}) {
    const auto X = random_floats(size_t(M) * D, ++seed, -1.f, 1.f), W = random_floats(size_t(N) * D, ++seed);
    std::vector<float> want(size_t(M) * N);
    fc_in_forward_host(X.data(), W.data(), want.data(), M, N, D);
    DeviceBuffer<float> dx(X), dw(W), dh0(poisoned(size_t(M) * N + 1));
    fc_in_forward_cuda(dx.get(), dw.get(), dh0.get(), M, N, D, nullptr);
    auto got = dh0.download();
    EXPECT_TRUE(std::isnan(got.back())) << "written past the end";
    got.pop_back();
    EXPECT_EQ(got, want) << M << "x" << N << " D " << D;
  }
  EXPECT_THROW(fc_in_forward_cuda(nullptr, nullptr, nullptr, 1, 8, 0, nullptr), std::invalid_argument);
}

TEST(LayerNormCuda, InputBackwardRejectsObservationWidthsOutsideOneTo25) {
  for (const int D : {0, kLayerNormMaxObs + 1})
    EXPECT_THROW(layernorm_input_backward_cuda(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                               nullptr, nullptr, 4, 16, D, nullptr, nullptr),
                 std::invalid_argument)
        << D;
}

}  // namespace
}  // namespace grpo
