// Host twins of AdamW and the schedule vs first principles: a double-precision AdamW written
// from docs/spec/training.md steps 6-8, run for several epochs through grad_norm -> adamw ->
// advance_schedule; the no-op flag; StepLR.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/grad_norm.h"
#include "kernels/train_scalars.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::random_floats;

// The spec, in double: clip to max_norm, then PyTorch's AdamW with t counted from 1.
struct RefAdamW {
  std::vector<double> p, m, v;
  int t = 0;
  void step(const std::vector<float>& grads, double lr, double max_norm) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 1e-5;
    double ss = 0;
    for (float g : grads) ss += double(g) * g;
    const double k = max_norm / (std::sqrt(ss) + 1e-6);
    const double clip = k < 1 ? k : 1;
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = clip * grads[i];
      p[i] -= lr * wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      p[i] -= (lr / (1 - std::pow(b1, t))) * m[i] / (std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps);
    }
  }
};

std::vector<float> to_float(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }

TEST(AdamW, SeveralEpochsMatchDoubleReference) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{37}, size_t{1003}}) {
    for (float grad_scale : {0.01f, 1.0f}) {  // below and above the clip threshold
      auto p = random_floats(n, n, -1, 1);
      std::vector<float> m(n, 0.f), v(n, 0.f);
      RefAdamW ref{std::vector<double>(p.begin(), p.end()), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
      TrainScalars s = train_scalars_start(1e-2f);
      for (int epoch = 0; epoch < 6; ++epoch) {
        const auto g = random_floats(n, 1000 * n + epoch, -grad_scale, grad_scale);
        grad_norm_host(g.data(), n, &s, 1.0f, nullptr);
        adamw_host(p.data(), g.data(), m.data(), v.data(), n, &s, AdamWConfig{});
        advance_schedule_host(&s);
        ref.step(g, 1e-2, 1.0);
        ASSERT_TRUE(all_close(p, to_float(ref.p))) << "params, n " << n << " epoch " << epoch;
        ASSERT_TRUE(all_close(m, to_float(ref.m))) << "m, n " << n << " epoch " << epoch;
        // v ~ 1e-3 g^2 is tiny: relative error only.
        ASSERT_TRUE(all_close(v, to_float(ref.v), 0.0, 1e-5)) << "v, n " << n << " epoch " << epoch;
      }
      EXPECT_EQ(s.adam_step, 6u);
      EXPECT_EQ(s.epoch, 6u);
      EXPECT_EQ(s.skipped_updates, 0u);
    }
  }
}

// Resuming with adam_step = 2 uses t = 3 in the bias corrections (t = 2 or 4 would move the
// update by 30%; compared on the update p1 - p0 itself, so an error cannot hide under p's size).
TEST(AdamW, BiasCorrectionUsesNextStep) {
  const size_t n = 5;
  const auto p0 = random_floats(n, 1, -1, 1);
  auto p = p0;
  auto g = random_floats(n, 2, -1, 1);
  auto m = random_floats(n, 3, -0.1f, 0.1f);
  auto v = random_floats(n, 4, 0.001f, 0.01f);
  RefAdamW ref{std::vector<double>(p.begin(), p.end()), std::vector<double>(m.begin(), m.end()),
               std::vector<double>(v.begin(), v.end()), 2};
  TrainScalars s = train_scalars_start(1e-2f, 2, 2);
  grad_norm_host(g.data(), n, &s, 1.0f, nullptr);
  adamw_host(p.data(), g.data(), m.data(), v.data(), n, &s, AdamWConfig{});
  ref.step(g, 1e-2, 1.0);
  std::vector<double> got_delta(n), want_delta(n);
  for (size_t i = 0; i < n; ++i) {
    got_delta[i] = double(p[i]) - p0[i];
    want_delta[i] = ref.p[i] - p0[i];
  }
  EXPECT_LT(test::rel_l2(got_delta, want_delta), 1e-4);
  EXPECT_TRUE(all_close(m, to_float(ref.m)));
  EXPECT_TRUE(all_close(v, to_float(ref.v), 0.0, 1e-5));
}

// Clipping is folded into the update: clip_scale c on grads g is bit-identical to c*g with c = 1.
TEST(AdamW, ClipScaleIsAppliedToGradients) {
  const size_t n = 103;
  const auto p0 = random_floats(n, 5, -1, 1), g = random_floats(n, 6, -1, 1);
  const auto m0 = random_floats(n, 7, -0.1f, 0.1f), v0 = random_floats(n, 8, 0.f, 0.01f);
  auto pa = p0, ma = m0, va = v0, pb = p0, mb = m0, vb = v0;
  TrainScalars s = train_scalars_start(1e-3f, 0, 3);
  s.clip_scale = 0.37f;
  adamw_host(pa.data(), g.data(), ma.data(), va.data(), n, &s, AdamWConfig{});
  std::vector<float> gs(n);
  for (size_t i = 0; i < n; ++i) gs[i] = 0.37f * g[i];
  s.clip_scale = 1.0f;
  adamw_host(pb.data(), gs.data(), mb.data(), vb.data(), n, &s, AdamWConfig{});
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(ma.data(), mb.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(va.data(), vb.data(), n * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(pa.data(), p0.data(), n * sizeof(float)), 0);
}

// apex's no-op flag: a non-finite gradient skips the whole update; the schedule counts it,
// does not advance t, clears the flag and still moves the epoch on.
TEST(AdamW, NonFiniteGradientsSkipTheUpdate) {
  const size_t n = 1001;
  const auto p0 = random_floats(n, 9, -1, 1), m0 = random_floats(n, 10, -0.1f, 0.1f);
  const auto v0 = random_floats(n, 11, 0.f, 0.01f);
  auto p = p0, m = m0, v = v0;
  auto g = random_floats(n, 12, -1, 1);
  g[777] = std::numeric_limits<float>::quiet_NaN();
  TrainScalars s = train_scalars_start(1e-3f, 10, 7);
  grad_norm_host(g.data(), n, &s, 1.0f, nullptr);
  ASSERT_EQ(s.nonfinite, 1u);
  adamw_host(p.data(), g.data(), m.data(), v.data(), n, &s, AdamWConfig{});
  EXPECT_EQ(std::memcmp(p.data(), p0.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(m.data(), m0.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(v.data(), v0.data(), n * sizeof(float)), 0);
  advance_schedule_host(&s);
  EXPECT_EQ(s.adam_step, 7u);
  EXPECT_EQ(s.skipped_updates, 1u);
  EXPECT_EQ(s.nonfinite, 0u);
  EXPECT_EQ(s.epoch, 11u);
  // The next finite epoch updates with t = 8.
  g[777] = 0.5f;
  grad_norm_host(g.data(), n, &s, 1.0f, nullptr);
  adamw_host(p.data(), g.data(), m.data(), v.data(), n, &s, AdamWConfig{});
  advance_schedule_host(&s);
  EXPECT_EQ(s.adam_step, 8u);
  EXPECT_NE(std::memcmp(p.data(), p0.data(), n * sizeof(float)), 0);
}

TEST(Schedule, StepLrMatchesSpec) {
  for (float lr0 : {1e-4f, 5e-4f, 3e-3f}) {
    for (uint32_t e : {0u, 1u, 999u, 1000u, 1001u, 1999u, 2000u, 54321u, 1000000u}) {
      const long double want = lr0 * std::pow(0.95L, static_cast<long double>(e / 1000));
      EXPECT_NEAR(step_lr(lr0, e), static_cast<double>(want), 1e-6 * static_cast<double>(want)) << e;
    }
    EXPECT_EQ(step_lr(lr0, 999), lr0);
    EXPECT_LT(step_lr(lr0, 1000), lr0);
  }
}

// --lr-schedule linear: StepLR times (E - min(e, E)) / E, against a long-double evaluation of
// the spec's formula, at random rates and horizons (fresh each run, printed on failure).
TEST(Schedule, LinearLrMatchesSpec) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const float lr0 = std::uniform_real_distribution<float>(1e-6f, 1e-2f)(rng);
    const uint32_t E = std::uniform_int_distribution<uint32_t>(1, 20000)(rng);
    for (uint32_t e : {0u, 1u, E / 2, E - 1, E, E + 1, E + 5000}) {
      const long double stepped = lr0 * std::pow(0.95L, static_cast<long double>(e / 1000));
      const long double want = stepped * (e < E ? E - e : 0) / E;
      const float got = linear_lr(lr0, e, E);
      EXPECT_NEAR(got, static_cast<double>(want), 1e-6 * static_cast<double>(stepped))
          << "lr0 " << lr0 << " E " << E << " e " << e;
      EXPECT_GE(got, 0.f);
    }
    EXPECT_EQ(linear_lr(lr0, 0, E), lr0);
    EXPECT_EQ(linear_lr(lr0, E, E), 0.f);
    EXPECT_EQ(linear_lr(lr0, E - 1, 0), step_lr(lr0, E - 1)) << "E = 0 is StepLR alone";
  }
}

TEST(Schedule, LinearAdvanceDecaysToZeroAndResumesOnTheSameRate) {
  const uint32_t E = 7;
  TrainScalars s = train_scalars_start(1e-3f, 0, 0, E);
  EXPECT_EQ(s.lr, 1e-3f);
  float prev = s.lr;
  for (uint32_t e = 1; e <= E; ++e) {
    advance_schedule_host(&s);
    EXPECT_EQ(s.epoch, e);
    EXPECT_LT(s.lr, prev) << e;
    EXPECT_EQ(s.lr, static_cast<float>(double{1e-3f} * (E - e) / E)) << e;
    EXPECT_EQ(train_scalars_start(1e-3f, e, e, E).lr, s.lr) << "resuming at epoch " << e;
    prev = s.lr;
  }
  EXPECT_EQ(s.lr, 0.f);
  EXPECT_EQ(s.lr_anneal_epochs, E);
}

TEST(Schedule, AdvanceMovesEpochStepAndLr) {
  TrainScalars s = train_scalars_start(1e-3f, 998, 998);
  EXPECT_EQ(s.lr, 1e-3f);
  EXPECT_EQ(s.clip_scale, 1.0f);
  advance_schedule_host(&s);
  EXPECT_EQ(s.epoch, 999u);
  EXPECT_EQ(s.adam_step, 999u);
  EXPECT_EQ(s.lr, 1e-3f);
  advance_schedule_host(&s);
  EXPECT_EQ(s.epoch, 1000u);
  EXPECT_EQ(s.adam_step, 1000u);
  EXPECT_EQ(s.lr, static_cast<float>(double{1e-3f} * 0.95));
  // Resuming lands on the same learning rate as running through.
  EXPECT_EQ(train_scalars_start(1e-3f, 1000, 1000).lr, s.lr);
}

TEST(Schedule, FinishUpdateCountsTheUpdateButNotTheEpoch) {
  TrainScalars s = train_scalars_start(1e-3f, 999, 1500);
  const float lr = s.lr;
  finish_update_host(&s);
  EXPECT_EQ(s.adam_step, 1501u);
  EXPECT_EQ(s.epoch, 999u);
  EXPECT_EQ(s.lr, lr);
  s.nonfinite = 1;
  finish_update_host(&s);
  EXPECT_EQ(s.adam_step, 1501u);
  EXPECT_EQ(s.skipped_updates, 1u);
  EXPECT_EQ(s.nonfinite, 0u);
  advance_schedule_host(&s);  // the epoch's last update, then the epoch moves on
  EXPECT_EQ(s.adam_step, 1502u);
  EXPECT_EQ(s.epoch, 1000u);
  EXPECT_LT(s.lr, lr);
}

}  // namespace
}  // namespace grpo
