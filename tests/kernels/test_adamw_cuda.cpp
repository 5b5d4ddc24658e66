// The fused AdamW kernel and the advance_schedule kernel vs their host twins. Both are written
// with non-contractible operations (kernels/adamw.h), so the comparison is bit for bit.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/fc_in.h"
#include "kernels/grad_norm.h"
#include "kernels/train_scalars.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::random_floats;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
bool same_bits(const TrainScalars& a, const TrainScalars& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Several epochs of grad_norm -> adamw -> advance_schedule on both executors, starting near an
// lr drop so the schedule's step is crossed too.
TEST(AdamWCuda, EpochsEqualHostTwinBitForBit) {
  GRPO_REQUIRE_DEVICE();
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{37}, size_t{1001}, size_t{4099}}) {
    auto p = random_floats(n, n, -1, 1);
    auto m = random_floats(n, n + 1, -0.01f, 0.01f);
    auto v = random_floats(n, n + 2, 0.f, 1e-4f);
    DeviceBuffer<float> dp(p), dm(m), dv(v), dg(n), scratch(grad_norm_scratch_floats(n));
    TrainScalars s = train_scalars_start(1e-2f, 998, 998);
    DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{s});
    for (int epoch = 0; epoch < 4; ++epoch) {
      const auto g = random_floats(n, 77 * n + epoch, -0.3f, 0.3f);
      dg.upload(g);
      grad_norm_host(g.data(), n, &s, 1.0f, nullptr);
      adamw_host(p.data(), g.data(), m.data(), v.data(), n, &s, AdamWConfig{});
      advance_schedule_host(&s);
      grad_norm_cuda(dg.get(), n, ds.get(), 1.0f, scratch.get(), nullptr);
      adamw_cuda(dp.get(), dg.get(), dm.get(), dv.get(), n, ds.get(), AdamWConfig{}, nullptr);
      advance_schedule_cuda(ds.get(), nullptr);
      const TrainScalars got = ds.download()[0];
      // The norm's double sums may differ in order; everything downstream of it must not.
      // Put the host's norm and clip into the device's scalars to keep the runs in lockstep.
      ASSERT_NEAR(got.grad_norm, s.grad_norm, 1e-6 * s.grad_norm);
      ASSERT_NEAR(got.clip_scale, s.clip_scale, 1e-6 * s.clip_scale);
      ds.upload(std::vector<TrainScalars>{s});
      ASSERT_TRUE(same_bits(dp.download(), p)) << "params, n " << n << " epoch " << epoch;
      ASSERT_TRUE(same_bits(dm.download(), m)) << "m, n " << n << " epoch " << epoch;
      ASSERT_TRUE(same_bits(dv.download(), v)) << "v, n " << n << " epoch " << epoch;
      TrainScalars g2 = got;
      g2.grad_norm = s.grad_norm;
      g2.clip_scale = s.clip_scale;
      ASSERT_TRUE(same_bits(g2, s)) << "scalars, epoch " << epoch;
    }
    EXPECT_EQ(s.epoch, 1002u);
    EXPECT_EQ(s.adam_step, 1002u);
    EXPECT_LT(s.lr, 1e-2f);
  }
}

TEST(AdamWCuda, NonFiniteFlagSkipsTheUpdate) {
  GRPO_REQUIRE_DEVICE();
  const size_t n = 1003;
  const auto p0 = random_floats(n, 1, -1, 1), m0 = random_floats(n, 2, -0.1f, 0.1f);
  const auto v0 = random_floats(n, 3, 0.f, 0.01f);
  auto g = random_floats(n, 4, -1, 1);
  g[1001] = std::numeric_limits<float>::infinity();
  DeviceBuffer<float> dp(p0), dm(m0), dv(v0), dg(g), scratch(grad_norm_scratch_floats(n));
  DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{train_scalars_start(1e-3f, 5, 5)});
  grad_norm_cuda(dg.get(), n, ds.get(), 1.0f, scratch.get(), nullptr);
  adamw_cuda(dp.get(), dg.get(), dm.get(), dv.get(), n, ds.get(), AdamWConfig{}, nullptr);
  EXPECT_EQ(ds.download()[0].nonfinite, 1u);
  EXPECT_TRUE(same_bits(dp.download(), p0));
  EXPECT_TRUE(same_bits(dm.download(), m0));
  EXPECT_TRUE(same_bits(dv.download(), v0));
  advance_schedule_cuda(ds.get(), nullptr);
  const TrainScalars s = ds.download()[0];
  EXPECT_EQ(s.nonfinite, 0u);
  EXPECT_EQ(s.skipped_updates, 1u);
  EXPECT_EQ(s.adam_step, 5u);
  EXPECT_EQ(s.epoch, 6u);
}

// One update of n elements on the host and its copy on the device: random parameters (seed
// p_seed), moments and gradients (seed g_seed), the scalars of update 8, or of a skipped update.
struct Update {
  std::vector<float> p, m, v, g;
  DeviceBuffer<float> dp, dm, dv, dg;
  TrainScalars s;
  DeviceBuffer<TrainScalars> ds;
  Update(size_t n, uint64_t p_seed, uint64_t g_seed, bool skipped = false)
      : p(random_floats(n, p_seed, -1, 1)),
        m(random_floats(n, 2, -0.1f, 0.1f)),
        v(random_floats(n, 3, 0.f, 0.01f)),
        g(random_floats(n, g_seed, -1, 1)),
        dp(p),
        dm(m),
        dv(v),
        dg(g),
        s(train_scalars_start(1e-3f, 7, 7)),
        ds(std::vector<TrainScalars>{with_skip(s, skipped)}) {}
  static TrainScalars with_skip(TrainScalars t, bool skipped) {
    t.nonfinite = skipped ? 1u : 0u;
    return t;
  }
  void on_host(const WeightCopies& c) { adamw_host(p.data(), g.data(), m.data(), v.data(), p.size(), &s, {}, c); }
  void on_device(const WeightCopies& c) {
    adamw_cuda(dp.get(), dg.get(), dm.get(), dv.get(), p.size(), ds.get(), AdamWConfig{}, nullptr, c);
  }
};

// The bf16 copy of a range of the slab comes out of the update: on the device and the host
// alike, each element of [begin, begin + count) is to_bf16 of its new value, bit for bit, and
// nothing outside the range is written (the destination is poisoned beyond it). Ranges that
// start and end off the float4 boundaries, and one through the scalar tail. A skipped update
// writes no copy.
TEST(AdamWCuda, WritesTheBf16CopyOfARange) {
  GRPO_REQUIRE_DEVICE();
  const size_t n = 1003;
  struct Range {
    size_t begin, count;
  };
  for (const Range r : {Range{0, n}, Range{5, 998}, Range{17, 1}, Range{990, 13}, Range{2, 0}}) {
    SCOPED_TRACE(::testing::Message() << "range " << r.begin << " + " << r.count);
    Update u(n, r.begin + 1, r.count + 4);
    const Bf16 poison{0xFFFF};
    std::vector<Bf16> host_copy(r.count + 8, poison);
    DeviceBuffer<Bf16> dcopy(host_copy);
    u.on_host(Bf16Copy{r.begin, r.count, host_copy.data()});
    u.on_device(Bf16Copy{r.begin, r.count, dcopy.get()});
    ASSERT_TRUE(same_bits(u.dp.download(), u.p));
    const std::vector<Bf16> got = dcopy.download();
    for (size_t i = 0; i < r.count + 8; ++i) {
      const uint16_t want = i < r.count ? to_bf16(u.p[r.begin + i]).bits : poison.bits;
      ASSERT_EQ(host_copy[i].bits, want) << "host @" << i;
      ASSERT_EQ(got[i].bits, want) << "device @" << i;
    }
  }
  // Skipped: the copy keeps what it held.
  Update skipped(n, 8, 9, true);
  DeviceBuffer<Bf16> dcopy(std::vector<Bf16>(n, Bf16{0x1234}));
  skipped.on_device(Bf16Copy{0, n, dcopy.get()});
  for (const Bf16 b : dcopy.download()) ASSERT_EQ(b.bits, 0x1234);
  // A range outside the slab is refused before any launch.
  EXPECT_THROW(skipped.on_device(Bf16Copy{n - 2, 3, dcopy.get()}), std::invalid_argument);
}

// The transposed copy of a matrix in the slab comes out of the update, beside a bf16 copy of
// another range: on the device and the host alike it is fc_in_transpose of the updated matrix,
// bit for bit, padding included (the padding, which the update never writes, as the whole
// transpose left it); elements of the slab outside the matrix write nothing. Matrices at odd
// offsets and shapes (the pitch past the rows), one through the scalar tail. A skipped update
// writes no copy; a matrix outside the slab, or a pitch shorter than its rows, is refused.
TEST(AdamWCuda, WritesTheTransposedCopyOfAMatrix) {
  GRPO_REQUIRE_DEVICE();
  const size_t n = 1003;
  struct Matrix {
    size_t begin;
    int rows, cols;
  };
  for (const Matrix mx : {Matrix{0, 97, 10}, Matrix{13, 33, 7}, Matrix{700, 30, 10}, Matrix{1002, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "matrix at " << mx.begin << ", " << mx.rows << " x " << mx.cols);
    Update u(n, mx.begin + 1, mx.rows + 4);
    const std::vector<float>& p = u.p;
    const unsigned pitch = fc_in_t_pitch(mx.rows);
    // What refresh_weight_copies left before the update: the old matrix transposed, zero padding.
    std::vector<float> host_t(size_t(mx.cols) * pitch + 8, test::poison_value());
    fc_in_transpose_host(p.data() + mx.begin, host_t.data(), mx.rows, mx.cols);
    DeviceBuffer<float> dt(host_t);
    const TransposedCopy at{mx.begin, unsigned(mx.rows), unsigned(mx.cols), pitch, nullptr};
    TransposedCopy host_at = at, dev_at = at;
    host_at.dst = host_t.data(), dev_at.dst = dt.get();
    std::vector<Bf16> host_b(5, Bf16{0xFFFF});
    DeviceBuffer<Bf16> db(host_b);
    u.on_host(WeightCopies(Bf16Copy{3, 5, host_b.data()}, host_at));
    u.on_device(WeightCopies(Bf16Copy{3, 5, db.get()}, dev_at));
    ASSERT_TRUE(same_bits(u.dp.download(), p));
    std::vector<float> want(size_t(mx.cols) * pitch + 8, test::poison_value());
    fc_in_transpose_host(p.data() + mx.begin, want.data(), mx.rows, mx.cols);
    EXPECT_TRUE(same_bits(host_t, want)) << "host";
    EXPECT_TRUE(same_bits(dt.download(), want)) << "device";
    const std::vector<Bf16> got_b = db.download();
    for (size_t i = 0; i < 5; ++i) ASSERT_EQ(got_b[i].bits, to_bf16(p[3 + i]).bits) << "the bf16 copy beside it @" << i;
  }
  Update skipped(n, 8, 9, true);
  DeviceBuffer<float> dt(std::vector<float>(40, 0.5f));
  skipped.on_device(WeightCopies(Bf16Copy{}, TransposedCopy{0, 4, 10, 4, dt.get()}));
  for (const float x : dt.download()) ASSERT_EQ(x, 0.5f) << "a skipped update writes no copy";
  EXPECT_THROW(skipped.on_device(WeightCopies(Bf16Copy{}, TransposedCopy{n - 5, 2, 3, 4, dt.get()})),
               std::invalid_argument);
  EXPECT_THROW(skipped.on_device(WeightCopies(Bf16Copy{}, TransposedCopy{0, 5, 2, 4, dt.get()})),
               std::invalid_argument);
}

// The StepLR power on the device equals the host's, also far into a run.
TEST(AdamWCuda, AdvanceScheduleEqualsHostTwin) {
  GRPO_REQUIRE_DEVICE();
  for (uint32_t epoch : {0u, 999u, 1999u, 123999u, 4999999u}) {
    TrainScalars s = train_scalars_start(7e-4f, epoch, epoch / 2);
    s.nonfinite = epoch % 2;
    DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{s});
    advance_schedule_host(&s);
    advance_schedule_cuda(ds.get(), nullptr);
    EXPECT_TRUE(same_bits(ds.download()[0], s)) << epoch;
  }
}

// The linear decay's quotient on the device equals the host's, at every epoch of a horizon.
TEST(AdamWCuda, AdvanceLinearScheduleEqualsHostTwin) {
  GRPO_REQUIRE_DEVICE();
  for (uint32_t horizon : {1u, 3u, 200u, 2999u}) {
    TrainScalars s = train_scalars_start(7.3e-4f, 0, 0, horizon);
    DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{s});
    for (uint32_t e = 0; e < std::min(horizon + 2, 300u); ++e) {
      advance_schedule_host(&s);
      advance_schedule_cuda(ds.get(), nullptr);
    }
    EXPECT_TRUE(same_bits(ds.download()[0], s)) << horizon;
  }
}

TEST(AdamWCuda, FinishUpdateEqualsHostTwin) {
  GRPO_REQUIRE_DEVICE();
  for (uint32_t nonfinite : {0u, 1u}) {
    TrainScalars s = train_scalars_start(7e-4f, 1234, 4321);
    s.nonfinite = nonfinite;
    DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{s});
    finish_update_host(&s);
    finish_update_cuda(ds.get(), nullptr);
    EXPECT_TRUE(same_bits(ds.download()[0], s)) << nonfinite;
  }
}

TEST(AdamWCuda, RejectsMisalignedSlabs) {
  GRPO_REQUIRE_DEVICE();
  DeviceBuffer<float> a(8), b(8), c(8), d(8);
  DeviceBuffer<TrainScalars> s(1);
  EXPECT_THROW(adamw_cuda(a.get() + 1, b.get(), c.get(), d.get(), 7, s.get(), AdamWConfig{}, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace grpo
