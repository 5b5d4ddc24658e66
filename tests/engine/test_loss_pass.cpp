// HostOps' blocked loss pass (engine/host/loss_pass.cpp) against Ops::loss_pass's default (the
// head, then the trunk's backward over all rows, on the same HostOps), with dropout on: one row,
// several blocks with a short last one, and the small preset's width. Gradients start poisoned.
#include <random>
#include <vector>

#include "engine/host/ops.h"
#include "engine/policy.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct Case {
  int M, H, D;
};

struct Result {
  std::vector<float> grads, logits, dlogits;
  float loss;
};

Result run(const Case& c, bool blocked, uint64_t seed) {
  const ParamLayout l(c.H, c.D);
  std::vector<float> params(l.total, 0.f);
  for (const ParamTensor& t : l.tensors) {
    const auto v = random_floats(t.size(), seed + t.offset, -0.3f, 0.3f);
    std::copy(v.begin(), v.end(), params.begin() + t.offset);
  }
  std::vector<float> grads(l.total, 0.f);
  for (const ParamTensor& t : l.tensors) std::fill_n(grads.begin() + t.offset, t.size(), poison_value());
  const size_t MH = size_t(c.M) * c.H;
  std::vector<float> h0 = poisoned(MH), h1 = poisoned(MH), a1 = poisoned(MH), h2 = poisoned(MH),
                     trunk_work = poisoned(MH);
  std::vector<float> logits = poisoned(size_t(c.M) * kActions), dlogits = poisoned(size_t(c.M) * kActions);
  std::vector<float> mean = poisoned(c.M), rstd = poisoned(c.M), loss = poisoned(1);
  std::vector<float> scratch(size_t(4) * 256 * c.H + 4096, 0.f);
  const auto X = random_floats(size_t(c.M) * c.D, seed + 1, -2.f, 2.f), adv = random_floats(c.M, seed + 2, -6.f, 6.f);
  std::vector<int32_t> actions(c.M);
  std::mt19937 gen(uint32_t(seed + 3));
  for (auto& a : actions) a = int32_t(gen() % kActions);

  HostOps ops(GameConfig{}, 1);
  const ParamViews p = ParamViews::over(params.data(), l), g = ParamViews::over(grads.data(), l);
  const PolicyActs acts{h0.data(), h1.data(), a1.data(), h2.data(), logits.data(), mean.data(), rstd.data()};
  policy_trunk_forward(ops, p, X.data(), c.M, c.D, c.H, acts);
  const uint32_t epoch = 9;
  Ops::HeadLoss h{};
  h.a1 = a1.data();
  h.b1 = p.fc1_b;
  h.w_out = p.fc_out_w;
  h.b_out = p.fc_out_b;
  h.actions = actions.data();
  h.adv = adv.data();
  h.M = c.M;
  h.H = c.H;
  h.objective = PolicyObjective{0.01f};
  h.drop = DropoutSpec{0.1f, 7, Purpose::DropoutLoss, &epoch, 0};
  h.logits = logits.data();
  h.dlogits = dlogits.data();
  h.h2 = h2.data();
  h.dh2 = trunk_work.data();
  h.da1 = h2.data();
  h.g_b1 = g.fc1_b;
  h.g_w_out = g.fc_out_w;
  h.g_b_out = g.fc_out_b;
  h.loss = loss.data();
  h.scratch = scratch.data();
  const Ops::LossPass lp{h, p, g, acts, X.data(), c.D, trunk_work.data()};
  if (blocked)
    ops.loss_pass(lp);
  else
    ops.Ops::loss_pass(lp);
  return {grads, logits, dlogits, loss[0]};
}

TEST(LossPass, BlockedHostMatchesTheWholePass) {
  uint64_t seed = 40;
  for (const Case c : {Case{1, 8, 1}, Case{1300, 40, 10}, Case{2048, 512, 10}}) {
    SCOPED_TRACE(::testing::Message() << "M " << c.M << " H " << c.H << " D " << c.D);
    seed += 100;
    const Result want = run(c, false, seed), got = run(c, true, seed);
    const ParamLayout l(c.H, c.D);
    for (const ParamTensor& t : l.tensors) {
      const std::vector<float> a(got.grads.begin() + t.offset, got.grads.begin() + t.offset + t.size()),
          b(want.grads.begin() + t.offset, want.grads.begin() + t.offset + t.size());
      EXPECT_LE(rel_l2(a, b), 1e-5) << "gradient of " << t.name;
    }
    EXPECT_TRUE(all_close(got.logits, want.logits)) << "logits";
    EXPECT_LE(rel_l2(got.dlogits, want.dlogits), 1e-5) << "dlogits";
    EXPECT_NEAR(got.loss, want.loss, 1e-5 + 1e-5 * std::fabs(want.loss)) << "loss";
  }
}

}  // namespace
}  // namespace grpo::test
