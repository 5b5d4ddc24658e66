// The two-stage gradient-norm kernels vs the host twin.
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/grad_norm.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poison_value;
using test::random_floats;

TrainScalars poisoned_scalars() {
  TrainScalars s = train_scalars_start(3e-4f, 1234, 99);
  s.grad_norm = poison_value();
  s.clip_scale = poison_value();
  s.loss = 0.25f;
  return s;
}

TrainScalars run_device(const std::vector<float>& g, TrainScalars s, float max_norm) {
  DeviceBuffer<float> dg(g);
  DeviceBuffer<float> scratch(test::poisoned(grad_norm_scratch_floats(g.size())));
  DeviceBuffer<TrainScalars> ds(std::vector<TrainScalars>{s});
  grad_norm_cuda(dg.get(), g.size(), ds.get(), max_norm, scratch.get(), nullptr);
  return ds.download()[0];
}

TEST(GradNormCuda, MatchesHostTwin) {
  GRPO_REQUIRE_DEVICE();
  for (size_t n : {size_t{1}, size_t{3}, size_t{5}, size_t{37}, size_t{1001}, size_t{70001}}) {
    for (float scale : {1e-4f, 2.0f}) {
      const auto g = random_floats(n, 3 * n + 1, -scale, scale);
      TrainScalars want = poisoned_scalars();
      grad_norm_host(g.data(), n, &want, 1.0f, nullptr);
      const TrainScalars got = run_device(g, poisoned_scalars(), 1.0f);
      EXPECT_NEAR(got.grad_norm, want.grad_norm, 1e-6 * want.grad_norm) << n;
      EXPECT_NEAR(got.clip_scale, want.clip_scale, 1e-6 * want.clip_scale) << n;
      EXPECT_EQ(got.nonfinite, 0u);
      // Everything else in the struct is untouched.
      TrainScalars a = got, b = want;
      a.grad_norm = b.grad_norm = 0;
      a.clip_scale = b.clip_scale = 0;
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << n;
    }
  }
}

TEST(GradNormCuda, IsDeterministic) {
  GRPO_REQUIRE_DEVICE();
  const auto g = random_floats(50003, 8, -1, 1);
  const TrainScalars a = run_device(g, poisoned_scalars(), 1.0f);
  const TrainScalars b = run_device(g, poisoned_scalars(), 1.0f);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(GradNormCuda, NonFiniteRaisesTheFlag) {
  GRPO_REQUIRE_DEVICE();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf}) {
    for (size_t where : {size_t{0}, size_t{4000}, size_t{9002}}) {  // 9002: in the scalar tail
      auto g = random_floats(9003, where, -1, 1);
      g[where] = bad;
      EXPECT_EQ(run_device(g, poisoned_scalars(), 1.0f).nonfinite, 1u) << bad << " at " << where;
    }
  }
}

TEST(GradNormCuda, RejectsMisalignedGradients) {
  GRPO_REQUIRE_DEVICE();
  DeviceBuffer<float> g(random_floats(64, 1));
  DeviceBuffer<float> scratch(grad_norm_scratch_floats(63));
  DeviceBuffer<TrainScalars> s(1);
  EXPECT_THROW(grad_norm_cuda(g.get() + 1, 63, s.get(), 1.0f, scratch.get(), nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
