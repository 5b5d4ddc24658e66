// HostOps::weights_unchanged: linear_forward with the packed copy gives the unpacked result, and
// after adamw (the only op that writes parameters in a step) a changed W is read afresh.
#include <vector>

#include "engine/host/ops.h"
#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

TEST(WeightsUnchanged, PackedForwardMatchesAndAdamWDropsTheCopy) {
  const int M = 50, N = 96, K = 40;
  auto W = random_floats(size_t(N) * K, 1);
  const auto X = random_floats(size_t(M) * K, 2), b = random_floats(N, 3);
  HostOps ops(GameConfig{}, 1);
  std::vector<float> want(size_t(M) * N), got = poisoned(size_t(M) * N);
  linear_forward_host(X.data(), W.data(), b.data(), want.data(), M, N, K);
  ops.weights_unchanged(W.data(), N, K);
  ops.linear_forward(X.data(), W.data(), b.data(), got.data(), M, N, K);
  EXPECT_LE(rel_l2(got, want), 1e-5);

  // A step's AdamW, then new weights in the same memory: the next product must see them.
  std::vector<float> grads(W.size(), 0.f), m(W.size(), 0.f), v(W.size(), 0.f);
  TrainScalars s = train_scalars_start(0.f);
  ops.adamw(W.data(), grads.data(), m.data(), v.data(), W.size(), &s, AdamWConfig{}, Bf16Copy{});
  for (auto& w : W) w = -w;
  linear_forward_host(X.data(), W.data(), b.data(), want.data(), M, N, K);
  got = poisoned(got.size());
  ops.linear_forward(X.data(), W.data(), b.data(), got.data(), M, N, K);
  EXPECT_LE(rel_l2(got, want), 1e-5);
}

}  // namespace
}  // namespace grpo::test
