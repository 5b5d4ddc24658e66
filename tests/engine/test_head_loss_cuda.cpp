// The loss pass's head on the device (kernels/head_loss.cu, CudaOps::policy_head_loss) against its
// host twin, Ops::policy_head_loss's default on HostOps (the seven ops in turn): the same logits,
// dlogits, da1, gradients and loss within the fp32 tolerances, for both objectives, with dropout
// on and off, on shapes with one row, ragged widths (scalar path), several row chunks, the
// presets' widths, every team size of the one-pass kernel and the two passes past H = 2048.
// Inputs are fresh and outputs poisoned; the seed is printed.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/cuda/ops.h"
#include "engine/host/ops.h"
#include "kernels/head_loss.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct Case {
  int M, H;
  float p;
  bool grpo;  // --algo grpo's objective (old log-probabilities, clip, KL) instead of the reference's
};

struct Inputs {
  std::vector<float> a1, b1, w_out, b_out, adv, old_logp;
  std::vector<int32_t> actions;
};

struct Outputs {
  std::vector<float> logits, dlogits, da1, g_b1, g_w_out, g_b_out, loss;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  // Pre-activations around GELU's bend, output weights large enough that the logits differ by
  // O(1), advantages past the reference's +-5 clamp, old log-probabilities near the new ones.
  in.a1 = random_floats(size_t(c.M) * c.H, seed + 1, -3.f, 3.f);
  in.b1 = random_floats(c.H, seed + 2, -0.5f, 0.5f);
  // Past H = 512 the output weights shrink as 1 / sqrt(H), so that the logits stay O(1): larger
  // ones put grpo's ratios at exp(10) and more, where two summation orders part by more than the
  // tolerances allow.
  const float w = 0.3f * std::min(1.f, std::sqrt(512.f / float(c.H)));
  in.w_out = random_floats(size_t(kActions) * c.H, seed + 3, -w, w);
  in.b_out = random_floats(kActions, seed + 4);
  in.adv = random_floats(c.M, seed + 5, -7.f, 7.f);
  in.old_logp = random_floats(c.M, seed + 6, -2.f, -0.2f);
  in.actions.resize(c.M);
  std::mt19937 gen(uint32_t(seed + 7));
  for (auto& x : in.actions) x = int32_t(gen() % kActions);
  return in;
}

PolicyObjective objective(const Case& c, const float* old_logp) {
  PolicyObjective o{0.01f};
  if (c.grpo) {
    o.old_logp = old_logp;
    o.clip = 0.2f;
    o.kl_beta = 0.05f;
  }
  return o;
}

Outputs host_reference(const Case& c, const Inputs& in, const uint32_t* epoch) {
  const size_t MH = size_t(c.M) * c.H;
  Outputs o{poisoned(size_t(c.M) * kActions),
            poisoned(size_t(c.M) * kActions),
            poisoned(MH),
            poisoned(c.H),
            poisoned(size_t(kActions) * c.H),
            poisoned(kActions),
            poisoned(1)};
  std::vector<float> h2 = poisoned(MH), dh2 = poisoned(MH), scratch(size_t(1) << 20, 0.f);
  HostOps ops(GameConfig{}, 1);
  ops.Ops::policy_head_loss(Ops::HeadLoss{in.a1.data(),
                                          in.b1.data(),
                                          in.w_out.data(),
                                          in.b_out.data(),
                                          in.actions.data(),
                                          in.adv.data(),
                                          c.M,
                                          c.H,
                                          objective(c, in.old_logp.data()),
                                          DropoutSpec{c.p, 99, Purpose::DropoutLoss, epoch, 3},
                                          o.logits.data(),
                                          o.dlogits.data(),
                                          h2.data(),
                                          dh2.data(),
                                          o.da1.data(),
                                          o.g_b1.data(),
                                          o.g_w_out.data(),
                                          o.g_b_out.data(),
                                          o.loss.data(),
                                          scratch.data()});
  return o;
}

// alias: da1 is written over h2, as engine/step.cpp passes it. copy: da1 goes out as bf16
// into *copy instead (--precision bf16), and the fp32 da1 must stay unwritten.
Outputs on_device(const Case& c, const Inputs& in, uint32_t epoch_value, bool alias = false,
                  std::vector<Bf16>* copy = nullptr) {
  const size_t MH = size_t(c.M) * c.H;
  DeviceBuffer<float> a1(in.a1), b1(in.b1), w_out(in.w_out), b_out(in.b_out), adv(in.adv), old_logp(in.old_logp);
  DeviceBuffer<int32_t> actions(in.actions);
  DeviceBuffer<uint32_t> epoch(std::vector<uint32_t>{epoch_value});
  DeviceBuffer<float> logits(poisoned(size_t(c.M) * kActions)), dlogits(poisoned(size_t(c.M) * kActions)),
      h2(poisoned(MH)), dh2(poisoned(MH)), da1(poisoned(MH)), g_b1(poisoned(c.H)),
      g_w_out(poisoned(size_t(kActions) * c.H)), g_b_out(poisoned(kActions)), loss(poisoned(1)),
      scratch(poisoned(head_loss_scratch_floats(c.M, c.H)));
  DeviceBuffer<Bf16> da1_bf16(std::vector<Bf16>(MH + 1, Bf16{0xdead}));
  Blas blas;
  CudaOps ops(GameConfig{}, 1, blas, nullptr);
  Ops::HeadLoss args{a1.get(),
                     b1.get(),
                     w_out.get(),
                     b_out.get(),
                     actions.get(),
                     adv.get(),
                     c.M,
                     c.H,
                     objective(c, old_logp.get()),
                     DropoutSpec{c.p, 99, Purpose::DropoutLoss, epoch.get(), 3},
                     logits.get(),
                     dlogits.get(),
                     h2.get(),
                     dh2.get(),
                     alias ? h2.get() : da1.get(),
                     g_b1.get(),
                     g_w_out.get(),
                     g_b_out.get(),
                     loss.get(),
                     scratch.get()};
  if (copy) args.da1_bf16 = da1_bf16.get();
  ops.policy_head_loss(args);
  if (copy) {
    *copy = da1_bf16.download();
    EXPECT_EQ(copy->at(MH).bits, 0xdead) << "da1_bf16 written past its end";
    copy->pop_back();
    size_t written = 0;
    for (float x : alias ? h2.download() : da1.download()) written += !std::isnan(x);
    EXPECT_EQ(written, 0u) << "da1 written beside its copy";
  } else {
    EXPECT_EQ(da1_bf16.download()[0].bits, 0xdead);
  }
  if (!alias) {
    const std::vector<float> h2_after = h2.download();
    EXPECT_TRUE(std::isnan(h2_after.front()) && std::isnan(h2_after.back())) << "h2 is never written";
  }
  return {logits.download(), dlogits.download(), alias ? h2.download() : da1.download(),
          g_b1.download(),   g_w_out.download(), g_b_out.download(),
          loss.download()};
}

void expect_matches(const Outputs& got, const Outputs& want) {
  EXPECT_TRUE(all_close(got.logits, want.logits)) << "logits";
  EXPECT_TRUE(all_close(got.dlogits, want.dlogits, 1e-7)) << "dlogits";
  EXPECT_LE(rel_l2(got.dlogits, want.dlogits), 1e-5) << "dlogits";
  EXPECT_LE(rel_l2(got.da1, want.da1), 1e-5) << "da1";
  EXPECT_LE(rel_l2(got.g_b1, want.g_b1), 1e-5) << "fc1.bias gradient";
  EXPECT_LE(rel_l2(got.g_w_out, want.g_w_out), 1e-5) << "fc_out.weight gradient";
  // fc_out.bias's gradient is three sums over the rows of dlogits, whose terms may cancel (a
  // clipped or a zero advantage): the bound is relative to the sum of the terms' sizes, which
  // sets how far two summation orders can drift apart, not to the sum itself.
  for (int a = 0; a < kActions; ++a) {
    double terms = 0;
    for (size_t r = a; r < want.dlogits.size(); r += kActions) terms += std::fabs(want.dlogits[r]);
    EXPECT_LE(std::fabs(got.g_b_out[a] - want.g_b_out[a]), 1e-5 * terms + 1e-7) << "fc_out.bias gradient " << a;
  }
  EXPECT_NEAR(got.loss[0], want.loss[0], 1e-5 + 1e-5 * std::fabs(want.loss[0])) << "loss";
}

TEST(HeadLossCuda, MatchesTheHostTwin) {
  GRPO_REQUIRE_DEVICE();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  // The one-pass kernel (head_loss::one_pass): H 8, 30 and 67 (ragged: the scalar path) and 128
  // take teams of 32 threads, 8 teams and 16 rows a round; 200 teams of 64, one group of columns
  // a thread; from 259 two groups a thread: 259 (ragged) and 512 four teams of 64, 1000 two of 128,
  // 1028, 1030 (ragged) and 2048 one of 256. Two rows a team a round. One row; 41, 43, 300 and more
  // rows: several row chunks, chunks of rows that are not whole rounds (a round's last rows past
  // the chunk) and a short last chunk.
  // 2052 and 2049 (ragged) take the two passes. At 259 and 2052 da1 is also written over h2, as
  // engine/step.cpp does.
  for (const Case c :
       {Case{1, 8, 0.1f, false}, Case{37, 67, 0.25f, true}, Case{300, 30, 0.f, false}, Case{3000, 128, 0.1f, true},
        Case{77, 200, 0.1f, true}, Case{700, 512, 0.1f, false}, Case{90, 259, 0.1f, true}, Case{45, 1000, 0.1f, false},
        Case{70, 1028, 0.1f, true}, Case{43, 1030, 0.1f, false}, Case{41, 2048, 0.2f, false},
        Case{40, 2052, 0.1f, true}, Case{9, 2049, 0.f, false}}) {
    SCOPED_TRACE(::testing::Message() << "M " << c.M << " H " << c.H << " p " << c.p << (c.grpo ? " grpo" : ""));
    const Inputs in = make_inputs(c, seed);
    const uint32_t epoch = uint32_t(seed % 1000);
    const Outputs want = host_reference(c, in, &epoch);
    expect_matches(on_device(c, in, epoch), want);
    if (c.H == 259 || c.H == 2052) {
      SCOPED_TRACE("da1 written over h2");
      expect_matches(on_device(c, in, epoch, true), want);
    }
  }
}

TEST(HeadLossCuda, OnePassUpToH2048) {
  EXPECT_EQ(head_loss::one_pass(8).team, 32u);
  EXPECT_EQ(head_loss::one_pass(256).groups_per_thread, 1u);
  EXPECT_EQ(head_loss::one_pass(256).team, 64u);
  EXPECT_EQ(head_loss::one_pass(257).groups_per_thread, 2u);
  EXPECT_EQ(head_loss::one_pass(512).team, 64u);  // the small preset: four teams, eight rows a round
  EXPECT_EQ(head_loss::one_pass(1028).team, 256u);
  EXPECT_EQ(head_loss::one_pass(2048).groups_per_thread, 2u);
  EXPECT_EQ(head_loss::one_pass(2049).groups_per_thread, 0u);
  for (int H = 1; H <= 2048; ++H) {  // every group has a thread: teams of at most 256 cover the row
    const head_loss::OnePass s = head_loss::one_pass(H);
    ASSERT_LE(s.team, 256u) << H;
    ASSERT_GE(s.team * s.groups_per_thread, unsigned(H + 3) / 4) << H;
    if (s.team > 32) {
      ASSERT_LT(s.team / 2 * s.groups_per_thread, unsigned(H + 3) / 4) << H << ": the least team";
    }
  }
}

TEST(HeadLossCuda, WritesTheBf16CopyOfDa1) {
  GRPO_REQUIRE_DEVICE();
  // Vector and scalar stores, in the one-pass kernel (one group a thread; two, in four teams at
  // the small preset's 512 and in one at 2048) and the two passes.
  for (const Case c : {Case{70, 64, 0.1f, false}, Case{33, 30, 0.f, true}, Case{45, 512, 0.1f, false},
                       Case{30, 2048, 0.1f, true}, Case{20, 2100, 0.1f, false}, Case{7, 2050, 0.1f, true}}) {
    SCOPED_TRACE(::testing::Message() << "M " << c.M << " H " << c.H);
    const Inputs in = make_inputs(c, 77);
    const uint32_t epoch = 5;
    const Outputs plain = on_device(c, in, epoch, true);
    std::vector<Bf16> copy;
    const Outputs with = on_device(c, in, epoch, true, &copy);
    // The same pass: every other output bit for bit, and the copy is the fp32 da1 rounded.
    EXPECT_EQ(with.logits, plain.logits);
    EXPECT_EQ(with.g_b1, plain.g_b1);
    EXPECT_EQ(with.g_w_out, plain.g_w_out);
    EXPECT_EQ(with.loss, plain.loss);
    ASSERT_EQ(copy.size(), plain.da1.size());
    for (size_t i = 0; i < copy.size(); ++i) ASSERT_EQ(copy[i].bits, to_bf16(plain.da1[i]).bits) << "da1_bf16 @" << i;
  }
}

TEST(HeadLossCuda, DrawsTheMaskOfTheEpochInMemory) {
  GRPO_REQUIRE_DEVICE();
  const Case c{64, 96, 0.5f, false};
  const Inputs in = make_inputs(c, 11);
  const Outputs first = on_device(c, in, 1), again = on_device(c, in, 1), next = on_device(c, in, 2);
  EXPECT_EQ(first.da1, again.da1) << "same epoch, same mask, same bits";
  EXPECT_EQ(first.g_w_out, again.g_w_out) << "a fixed summation order";
  EXPECT_NE(first.da1, next.da1) << "a new epoch in memory must draw a new mask";
}

TEST(HeadLossCuda, RejectsBadShapesAndDropout) {
  HeadLossArgs a{};
  a.M = 0;
  a.H = 8;
  EXPECT_THROW(head_loss_cuda(a, nullptr), std::invalid_argument);
  a.M = 4;
  a.H = 0;
  EXPECT_THROW(head_loss_cuda(a, nullptr), std::invalid_argument);
  a.H = 8;
  a.drop.p = 0.5f;  // without an epoch pointer
  EXPECT_THROW(head_loss_cuda(a, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace grpo::test
