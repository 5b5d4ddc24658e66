// HostOps' fused loss-pass head (engine/host/head_loss.cpp) against the seven ops it replaces
// (Ops::policy_head_loss's default, run on the same HostOps), with dropout on, on shapes that
// cover one row, widths that are not multiples of the vector or mask widths, several row chunks
// and the small preset's width. Outputs start poisoned.
#include <random>
#include <vector>

#include "engine/host/ops.h"
#include "kernels/policy_head.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct Case {
  int M, H;
  float p;
};

struct Outputs {
  std::vector<float> logits, dlogits, da1, g_b1, g_w_out, g_b_out, loss;
};

// Runs the head on fresh copies of the inputs; fused = HostOps' override, else the default.
Outputs run(HostOps& ops, const Case& c, const std::vector<float>& a1, const std::vector<float>& b1,
            const std::vector<float>& w_out, const std::vector<float>& b_out, const std::vector<int32_t>& actions,
            const std::vector<float>& adv, const uint32_t* epoch, bool fused, bool da1_aliases_h2) {
  const size_t MH = size_t(c.M) * c.H;
  Outputs o{poisoned(size_t(c.M) * kActions),
            poisoned(size_t(c.M) * kActions),
            poisoned(MH),
            poisoned(c.H),
            poisoned(size_t(kActions) * c.H),
            poisoned(kActions),
            poisoned(1)};
  std::vector<float> h2 = poisoned(MH), dh2 = poisoned(MH), scratch(size_t(1) << 20, 0.f);
  Ops::HeadLoss h{};
  h.a1 = a1.data();
  h.b1 = b1.data();
  h.w_out = w_out.data();
  h.b_out = b_out.data();
  h.actions = actions.data();
  h.adv = adv.data();
  h.M = c.M;
  h.H = c.H;
  h.objective = PolicyObjective{0.01f};
  h.drop = DropoutSpec{c.p, 99, Purpose::DropoutLoss, epoch, 0};
  h.logits = o.logits.data();
  h.dlogits = o.dlogits.data();
  h.h2 = h2.data();
  h.dh2 = dh2.data();
  h.da1 = da1_aliases_h2 ? h2.data() : o.da1.data();
  h.g_b1 = o.g_b1.data();
  h.g_w_out = o.g_w_out.data();
  h.g_b_out = o.g_b_out.data();
  h.loss = o.loss.data();
  h.scratch = scratch.data();
  if (fused)
    ops.policy_head_loss(h);
  else
    ops.Ops::policy_head_loss(h);
  if (da1_aliases_h2) o.da1 = h2;
  return o;
}

TEST(HeadLoss, FusedHostMatchesTheComposedOps) {
  uint64_t seed = 1;
  for (const Case c :
       {Case{1, 8, 0.1f}, Case{37, 24, 0.1f}, Case{300, 67, 0.25f}, Case{1000, 512, 0.1f}, Case{2500, 100, 0.f}}) {
    SCOPED_TRACE(::testing::Message() << "M " << c.M << " H " << c.H << " p " << c.p);
    const size_t MH = size_t(c.M) * c.H;
    // Pre-activations around GELU's bend, output weights large enough that the three logits
    // differ by O(1), advantages past the +-5 clamp on some rows.
    const auto a1 = random_floats(MH, ++seed, -3.f, 3.f), b1 = random_floats(c.H, ++seed, -0.5f, 0.5f),
               w_out = random_floats(size_t(kActions) * c.H, ++seed, -0.3f, 0.3f),
               b_out = random_floats(kActions, ++seed), adv = random_floats(c.M, ++seed, -7.f, 7.f);
    std::vector<int32_t> actions(c.M);
    std::mt19937 gen(uint32_t(++seed));
    for (auto& x : actions) x = int32_t(gen() % kActions);
    const uint32_t epoch = 5;
    HostOps ops(GameConfig{}, 1);
    const Outputs want = run(ops, c, a1, b1, w_out, b_out, actions, adv, &epoch, false, true);
    for (const bool alias : {false, true}) {
      SCOPED_TRACE(alias ? "da1 aliases h2" : "da1 separate");
      const Outputs got = run(ops, c, a1, b1, w_out, b_out, actions, adv, &epoch, true, alias);
      EXPECT_TRUE(all_close(got.logits, want.logits)) << "logits";
      EXPECT_LE(rel_l2(got.dlogits, want.dlogits), 1e-5) << "dlogits";
      EXPECT_LE(rel_l2(got.da1, want.da1), 1e-5) << "da1";
      EXPECT_LE(rel_l2(got.g_b1, want.g_b1), 1e-5) << "fc1.bias gradient";
      EXPECT_LE(rel_l2(got.g_w_out, want.g_w_out), 1e-5) << "fc_out.weight gradient";
      EXPECT_LE(rel_l2(got.g_b_out, want.g_b_out), 1e-5) << "fc_out.bias gradient";
      EXPECT_NEAR(got.loss[0], want.loss[0], 1e-5 + 1e-5 * std::fabs(want.loss[0])) << "loss";
    }
  }
}

TEST(HeadLoss, FusedHostDrawsTheMaskOfTheEpochInMemory) {
  const Case c{64, 96, 0.5f};
  const size_t MH = size_t(c.M) * c.H;
  const auto a1 = random_floats(MH, 11, -2.f, 2.f), b1 = random_floats(c.H, 12), w = random_floats(3 * c.H, 13),
             b = random_floats(3, 14), adv = random_floats(c.M, 15);
  const std::vector<int32_t> actions(c.M, 1);
  HostOps ops(GameConfig{}, 1);
  uint32_t epoch = 1;
  const Outputs first = run(ops, c, a1, b1, w, b, actions, adv, &epoch, true, false);
  const Outputs again = run(ops, c, a1, b1, w, b, actions, adv, &epoch, true, false);
  EXPECT_EQ(first.da1, again.da1) << "same epoch, same mask, same bits";
  epoch = 2;
  const Outputs next = run(ops, c, a1, b1, w, b, actions, adv, &epoch, true, false);
  EXPECT_NE(first.da1, next.da1) << "a new epoch in memory must draw a new mask";
}

TEST(HeadLoss, FusedHostRejectsBadShapes) {
  HostOps ops(GameConfig{}, 1);
  Ops::HeadLoss h{};
  h.M = 0;
  h.H = 8;
  EXPECT_THROW(ops.policy_head_loss(h), std::invalid_argument);
}

}  // namespace
}  // namespace grpo::test
