// Host twin of the gradient norm and clip factor vs first principles (long double sums).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/grad_norm.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::poison_value;
using test::random_floats;

TrainScalars poisoned_scalars() {
  TrainScalars s = train_scalars_start(1e-3f, 17, 5);
  s.grad_norm = poison_value();
  s.clip_scale = poison_value();
  return s;
}

long double norm_ld(const std::vector<float>& g) {
  long double s = 0;
  for (float x : g) s += static_cast<long double>(x) * x;
  return std::sqrt(s);
}

TEST(GradNorm, BlocksDependOnSizeOnly) {
  EXPECT_EQ(grad_norm_blocks(0), 1u);
  EXPECT_EQ(grad_norm_blocks(1), 1u);
  EXPECT_EQ(grad_norm_blocks(8192), 1u);
  EXPECT_EQ(grad_norm_blocks(8193), 2u);
  EXPECT_EQ(grad_norm_blocks(size_t{1} << 34), kGradNormMaxBlocks);
  EXPECT_EQ(grad_norm_scratch_floats(8193), 4u);  // two doubles
}

TEST(GradNorm, HostMatchesFirstPrinciplesAndClips) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{37}, size_t{1001}, size_t{100003}}) {
    for (float scale : {1e-4f, 1.0f, 30.0f}) {
      for (float max_norm : {1.0f, 0.5f}) {
        auto g = random_floats(n, 10 * n + static_cast<uint64_t>(scale * 7), -scale, scale);
        TrainScalars s = poisoned_scalars();
        grad_norm_host(g.data(), n, &s, max_norm, nullptr);
        const long double norm = norm_ld(g);
        EXPECT_NEAR(s.grad_norm, static_cast<double>(norm), 1e-6 * static_cast<double>(norm)) << n;
        const long double k = max_norm / (norm + 1e-6L);
        const double want_clip = k < 1 ? static_cast<double>(k) : 1.0;
        EXPECT_NEAR(s.clip_scale, want_clip, 1e-6 * want_clip) << n << " " << scale;
        if (k >= 1) {
          EXPECT_EQ(s.clip_scale, 1.0f);
        }
        EXPECT_EQ(s.nonfinite, 0u);
        EXPECT_EQ(s.epoch, 17u);  // the other scalars are left alone
        EXPECT_EQ(s.adam_step, 5u);
      }
    }
  }
}

TEST(GradNorm, EmptySlabHasNormZeroAndNoClip) {
  TrainScalars s = poisoned_scalars();
  grad_norm_host(nullptr, 0, &s, 1.0f, nullptr);
  EXPECT_EQ(s.grad_norm, 0.0f);
  EXPECT_EQ(s.clip_scale, 1.0f);
  EXPECT_EQ(s.nonfinite, 0u);
}

// Squares of 1e20 overflow float; the double accumulation must not.
TEST(GradNorm, HugeFiniteGradientsStayFinite) {
  auto g = random_floats(1003, 5, 1e20f, 2e20f);
  TrainScalars s = poisoned_scalars();
  grad_norm_host(g.data(), g.size(), &s, 1.0f, nullptr);
  EXPECT_EQ(s.nonfinite, 0u);
  EXPECT_NEAR(s.grad_norm, static_cast<double>(norm_ld(g)), 1e-6 * static_cast<double>(norm_ld(g)));
  EXPECT_GT(s.clip_scale, 0.0f);
  EXPECT_LT(s.clip_scale, 1e-19f);
}

TEST(GradNorm, NonFiniteGradientsRaiseTheFlagAndNeverClearIt) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {inf, -inf, nan}) {
    for (size_t where : {size_t{0}, size_t{500}, size_t{1002}}) {
      auto g = random_floats(1003, where, -1, 1);
      g[where] = bad;
      TrainScalars s = poisoned_scalars();
      grad_norm_host(g.data(), g.size(), &s, 1.0f, nullptr);
      EXPECT_EQ(s.nonfinite, 1u) << bad << " at " << where;
    }
  }
  // A raised flag survives a later finite norm: only advance_schedule clears it.
  auto g = random_floats(37, 1, -1, 1);
  TrainScalars s = poisoned_scalars();
  s.nonfinite = 1;
  grad_norm_host(g.data(), g.size(), &s, 1.0f, nullptr);
  EXPECT_EQ(s.nonfinite, 1u);
}

}  // namespace
}  // namespace grpo
