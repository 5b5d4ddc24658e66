// Host twins of the policy head vs first principles: log-softmax and entropy in double, the
// inverse-CDF sample redone in double, the loss in double, dlogits by central differences.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/policy_head.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct RowD {
  std::array<double, 3> logp, p;
  double entropy;
};

RowD naive_row(const float* z) {
  RowD r;
  const double m = std::max({double(z[0]), double(z[1]), double(z[2])});
  double s = 0;
  for (int a = 0; a < 3; ++a) s += std::exp(z[a] - m);
  r.entropy = 0;
  for (int a = 0; a < 3; ++a) {
    r.logp[a] = z[a] - m - std::log(s);
    r.p[a] = std::exp(r.logp[a]);
    r.entropy -= r.p[a] * r.logp[a];
  }
  return r;
}

// Logits in [-6, 6), some rows shifted by +-80 (exp would overflow without the max subtraction).
std::vector<float> make_logits(int M, uint64_t seed) {
  auto z = random_floats(3 * size_t(M), seed, -6.f, 6.f);
  for (int i = 0; i < M; i += 5)
    for (int a = 0; a < 3; ++a) z[3 * i + a] += (i % 10 == 0) ? 80.f : -80.f;
  return z;
}

TEST(PolicyHead, RowMatchesDoubleLogSoftmax) {
  const auto z = make_logits(301, 1);
  std::vector<float> got, ref;
  for (int i = 0; i < 301; ++i) {
    const PolicyRow r = policy_row(&z[3 * i]);
    const RowD d = naive_row(&z[3 * i]);
    for (int a = 0; a < 3; ++a) {
      got.insert(got.end(), {r.logp[a], r.p[a]});
      ref.insert(ref.end(), {float(d.logp[a]), float(d.p[a])});
    }
    got.push_back(r.entropy);
    ref.push_back(float(d.entropy));
  }
  EXPECT_TRUE(all_close(got, ref));
}

TEST(PolicyHead, SampleIsTheInverseCdfOfTheActionDraw) {
  for (int M : {1, 37, 1003}) {
    const auto z = make_logits(M, 10 + M);
    const uint32_t epoch = 12345, step = 17;
    std::vector<int32_t> actions(M, -7);
    auto logp = poisoned(M);
    sample_actions_host(z.data(), M, 42, &epoch, step, actions.data(), logp.data());
    std::vector<float> ref_logp(M);
    for (int i = 0; i < M; ++i) {
      const RowD d = naive_row(&z[3 * i]);
      const double u = (draw4(42, Purpose::Action, epoch, step, i).x >> 8) * 0x1p-24;
      const int want = u < d.p[0] ? 0 : (u < d.p[0] + d.p[1] ? 1 : 2);
      // Float vs double rounding may move a draw that sits on a bucket edge, nothing else.
      const double edge = std::min(std::fabs(u - d.p[0]), std::fabs(u - d.p[0] - d.p[1]));
      if (edge > 1e-6) {
        EXPECT_EQ(actions[i], want) << "row " << i << " u=" << u;
      }
      ASSERT_GE(actions[i], 0);
      ASSERT_LE(actions[i], 2);
      ref_logp[i] = float(d.logp[actions[i]]);
    }
    EXPECT_TRUE(all_close(logp, ref_logp)) << "M=" << M;
  }
}

TEST(PolicyHead, SampleFrequenciesFollowThePolicy) {
  const int M = 30000;
  const float row[3] = {0.3f, -1.2f, 1.1f};
  std::vector<float> z(3 * M);
  for (int i = 0; i < M; ++i) std::copy(row, row + 3, &z[3 * i]);
  std::vector<int32_t> actions(M);
  const uint32_t epoch = 3;
  sample_actions_host(z.data(), M, 7, &epoch, 0, actions.data(), nullptr);
  const RowD d = naive_row(row);
  for (int a = 0; a < 3; ++a) {
    const double f = std::count(actions.begin(), actions.end(), a) / double(M);
    const double sigma = std::sqrt(d.p[a] * (1 - d.p[a]) / M);
    EXPECT_NEAR(f, d.p[a], 5 * sigma) << "action " << a;
  }
}

TEST(PolicyHead, EpochAndStepGiveFreshDraws) {
  const int M = 2000;
  std::vector<float> z(3 * M, 0.f);  // uniform policy: every draw matters
  auto run = [&](uint32_t epoch, uint32_t step) {
    std::vector<int32_t> a(M);
    sample_actions_host(z.data(), M, 99, &epoch, step, a.data(), nullptr);
    return a;
  };
  auto differ = [&](const std::vector<int32_t>& x, const std::vector<int32_t>& y) {
    int n = 0;
    for (int i = 0; i < M; ++i) n += x[i] != y[i];
    return n / double(M);
  };
  const auto base = run(5, 2);
  EXPECT_EQ(differ(base, run(5, 2)), 0.0);   // a pure function of its inputs
  EXPECT_GT(differ(base, run(6, 2)), 0.55);  // independent draws differ 2/3 of the time
  EXPECT_GT(differ(base, run(5, 3)), 0.55);
}

// L in double, from the spec's formula.
double naive_loss(const std::vector<double>& z, const std::vector<int32_t>& act, const std::vector<float>& adv,
                  double c, double* entropy_mean = nullptr) {
  const int M = static_cast<int>(act.size());
  double loss = 0, ent = 0;
  for (int i = 0; i < M; ++i) {
    const double m = std::max({z[3 * i], z[3 * i + 1], z[3 * i + 2]});
    double s = 0;
    for (int a = 0; a < 3; ++a) s += std::exp(z[3 * i + a] - m);
    double h = 0;
    for (int a = 0; a < 3; ++a) {
      const double lp = z[3 * i + a] - m - std::log(s);
      h -= std::exp(lp) * lp;
    }
    const double lpa = z[3 * i + act[i]] - m - std::log(s);
    const double A = std::min(std::max(double(adv[i]), -5.0), 5.0);
    loss += -lpa * A - c * h;
    ent += h;
  }
  if (entropy_mean) *entropy_mean = ent / M;
  return loss / M;
}

// d loss / d z by central differences with step 1e-5, for any loss of the logits in double.
template <class Loss>
std::vector<double> central_differences(const std::vector<double>& z, Loss loss) {
  std::vector<double> fd(z.size());
  const double h = 1e-5;
  for (size_t k = 0; k < z.size(); ++k) {
    auto zp = z, zm = z;
    zp[k] += h;
    zm[k] -= h;
    fd[k] = (loss(zp) - loss(zm)) / (2 * h);
  }
  return fd;
}

TEST(PolicyHead, LossAndGradientMatchDoubleAndFiniteDifferences) {
  for (int M : {1, 7, 37}) {
    const auto zf = random_floats(3 * size_t(M), 200 + M, -3.f, 3.f);
    const auto adv = random_floats(M, 300 + M, -8.f, 8.f);  // beyond +-5: the clamp is exercised
    std::vector<int32_t> act(M);
    std::mt19937 gen(M);
    for (auto& a : act) a = std::uniform_int_distribution<int>(0, 2)(gen);
    const float c = 0.25f;  // larger than the reference's 0.01 so the entropy term shows

    auto dz = poisoned(3 * size_t(M));
    float loss = test::poison_value(), ent = test::poison_value();
    policy_loss_host(zf.data(), act.data(), adv.data(), M, PolicyObjective{c}, dz.data(), &loss, &ent, nullptr);

    std::vector<double> z(zf.begin(), zf.end());
    double ent_ref;
    const double loss_ref = naive_loss(z, act, adv, c, &ent_ref);
    EXPECT_NEAR(loss, loss_ref, 1e-5 + 1e-5 * std::fabs(loss_ref)) << "M=" << M;
    EXPECT_NEAR(ent, ent_ref, 1e-6 + 1e-5 * ent_ref) << "M=" << M;

    const auto fd = central_differences(z, [&](const std::vector<double>& x) { return naive_loss(x, act, adv, c); });
    EXPECT_LE(rel_l2(dz, fd), 1e-5) << "M=" << M;
    std::vector<float> fdf(fd.begin(), fd.end());
    EXPECT_TRUE(all_close(dz, fdf, 1e-6 / M, 1e-4)) << "M=" << M;
  }
}

TEST(PolicyHead, LossIsNotFooledByOutOfRangeActions) {
  const float z[3] = {0.1f, 0.2f, 0.3f}, adv = 1.f;
  const int32_t bad = 3;
  float dz[3], loss = 0, ent = 0;
  policy_loss_host(z, &bad, &adv, 1, PolicyObjective{0.01f}, dz, &loss, &ent, nullptr);
  EXPECT_TRUE(std::isnan(loss));
  EXPECT_THROW(policy_loss_host(z, &bad, &adv, 0, PolicyObjective{0.01f}, dz, &loss, &ent, nullptr),
               std::invalid_argument);
}

// --algo grpo's loss in double, straight from the spec's formulas.
double naive_grpo_loss(const std::vector<double>& z, const std::vector<int32_t>& act, const std::vector<float>& adv,
                       const std::vector<float>& old_logp, double clip, double beta, double c) {
  const int M = int(act.size());
  double loss = 0;
  for (int i = 0; i < M; ++i) {
    // The row in double from the double logits (naive_row takes floats).
    const double m = std::max({z[3 * i], z[3 * i + 1], z[3 * i + 2]});
    double s = 0;
    for (int a = 0; a < 3; ++a) s += std::exp(z[3 * i + a] - m);
    double lp[3], h = 0;
    for (int a = 0; a < 3; ++a) lp[a] = z[3 * i + a] - m - std::log(s);
    for (int a = 0; a < 3; ++a) h -= std::exp(lp[a]) * lp[a];
    const double A = adv[i], rho = std::exp(lp[act[i]] - old_logp[i]);
    const double surrogate = std::min(rho * A, std::min(std::max(rho, 1 - clip), 1 + clip) * A);
    const double back = old_logp[i] - lp[act[i]];
    loss += -surrogate + beta * (std::exp(back) - back - 1) - c * h;
  }
  return loss / M;
}

// Rollout log-probabilities near the current ones, so that some ratios fall inside the clip
// range and some outside it on either side.
std::vector<float> old_logp_near(const std::vector<float>& z, const std::vector<int32_t>& act, uint64_t seed) {
  const int M = int(act.size());
  const auto shift = random_floats(M, seed, -0.6f, 0.6f);
  std::vector<float> old(M);
  for (int i = 0; i < M; ++i) old[i] = float(naive_row(&z[3 * i]).logp[act[i]]) + shift[i];
  return old;
}

TEST(PolicyHead, GrpoLossAndGradientMatchDoubleAndFiniteDifferences) {
  for (float beta : {0.f, 0.3f}) {
    for (int M : {1, 7, 37, 301}) {
      const auto zf = random_floats(3 * size_t(M), 500 + M, -3.f, 3.f);
      const auto adv = random_floats(M, 600 + M, -4.f, 4.f);
      std::vector<int32_t> act(M);
      std::mt19937 gen(M);
      for (auto& a : act) a = std::uniform_int_distribution<int>(0, 2)(gen);
      const auto old = old_logp_near(zf, act, 700 + M);
      const float clip = 0.2f, c = 0.25f;
      const PolicyObjective obj{c, old.data(), clip, beta};

      auto dz = poisoned(3 * size_t(M));
      float loss = test::poison_value(), ent = test::poison_value();
      policy_loss_host(zf.data(), act.data(), adv.data(), M, obj, dz.data(), &loss, &ent, nullptr);
      std::vector<double> z(zf.begin(), zf.end());
      const double loss_ref = naive_grpo_loss(z, act, adv, old, clip, beta, c);
      EXPECT_NEAR(loss, loss_ref, 1e-5 + 1e-5 * std::fabs(loss_ref)) << "M=" << M << " beta=" << beta;

      // Central differences (no ratio lands within h of a clip boundary for these seeds, where
      // the surrogate has a kink).
      const auto fd = central_differences(
          z, [&](const std::vector<double>& x) { return naive_grpo_loss(x, act, adv, old, clip, beta, c); });
      EXPECT_LE(rel_l2(dz, fd), 1e-4) << "M=" << M << " beta=" << beta;
    }
  }
}

TEST(PolicyHead, GrpoClippedRowsMoveOnlyByEntropyAndKl) {
  // One row, action 0; the ratio pushed outside the clip range in the advantage's direction.
  const float z[3] = {0.4f, -0.1f, 0.2f};
  const float lp0 = naive_row(z).logp[0];
  struct Case {
    float adv, old_shift;  // old_logp = lp0 + old_shift: rho = exp(-old_shift)
    bool clipped;
  } cases[] = {{+1.f, -0.5f, true},  {+1.f, +0.5f, false}, {-1.f, +0.5f, true},
               {-1.f, -0.5f, false}, {+1.f, -0.1f, false}, {-1.f, +0.1f, false}};
  for (const Case& k : cases) {
    const float old = lp0 + k.old_shift, adv = k.adv;
    const int32_t a = 0;
    float dz[3], dz_free[3], loss, ent;
    policy_loss_host(z, &a, &adv, 1, PolicyObjective{0.f, &old, 0.2f, 0.f}, dz, &loss, &ent, nullptr);
    const float zero_adv = 0.f;
    policy_loss_host(z, &a, &zero_adv, 1, PolicyObjective{0.f, &old, 0.2f, 0.f}, dz_free, &loss, &ent, nullptr);
    const double norm = std::fabs(dz[0]) + std::fabs(dz[1]) + std::fabs(dz[2]);
    if (k.clipped)
      EXPECT_EQ(norm, 0.0) << "adv " << k.adv << " shift " << k.old_shift;
    else
      EXPECT_GT(norm, 0.05) << "adv " << k.adv << " shift " << k.old_shift;
    // With A = 0 and no entropy or KL weight nothing moves.
    EXPECT_EQ(std::fabs(dz_free[0]) + std::fabs(dz_free[1]) + std::fabs(dz_free[2]), 0.0);
  }
}

TEST(PolicyHead, GrpoAtTheRolloutPolicyIsThePolicyGradient) {
  // rho = 1 exactly and no KL: the surrogate's gradient is the reference's -A grad logp(a) with
  // A inside the reference's clamp, so both objectives give the same dlogits.
  const int M = 64;
  const auto z = random_floats(3 * size_t(M), 11, -3.f, 3.f);
  const auto adv = random_floats(M, 12, -4.f, 4.f);
  std::vector<int32_t> act(M);
  for (int i = 0; i < M; ++i) act[i] = i % 3;
  std::vector<float> old(M);
  action_log_probs_host(z.data(), act.data(), M, old.data());
  std::vector<float> dz_ref(3 * M), dz_grpo(3 * M);
  float l_ref, l_grpo, e;
  policy_loss_host(z.data(), act.data(), adv.data(), M, PolicyObjective{0.01f}, dz_ref.data(), &l_ref, &e, nullptr);
  policy_loss_host(z.data(), act.data(), adv.data(), M, PolicyObjective{0.01f, old.data(), 0.2f, 0.f}, dz_grpo.data(),
                   &l_grpo, &e, nullptr);
  EXPECT_TRUE(all_close(dz_grpo, dz_ref, 1e-7f, 1e-5f));
}

TEST(PolicyHead, ActionLogProbsAreTheLogSoftmaxOfTheAction) {
  const int M = 301;
  const auto z = make_logits(M, 21);
  std::vector<int32_t> act(M);
  for (int i = 0; i < M; ++i) act[i] = (7 * i) % 3;
  act[5] = 3;  // out of range: NaN, never a neighbour's logit
  auto lp = poisoned(M);
  action_log_probs_host(z.data(), act.data(), M, lp.data());
  for (int i = 0; i < M; ++i) {
    if (i == 5) {
      EXPECT_TRUE(std::isnan(lp[i]));
      continue;
    }
    EXPECT_NEAR(lp[i], naive_row(&z[3 * i]).logp[act[i]], 1e-5) << i;
  }
  EXPECT_THROW(action_log_probs_host(z.data(), act.data(), -1, lp.data()), std::invalid_argument);
}

}  // namespace
}  // namespace grpo
