// Policy head kernels vs their host twins: sampling (also under graph replay, with the epoch
// read from device memory) and the loss with its gradient.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/policy_head.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::all_close;
using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;

std::vector<float> logits_for(int M, uint64_t seed) {
  auto z = random_floats(3 * size_t(M), seed, -4.f, 4.f);
  for (int i = 0; i < M; i += 7) z[3 * i + 1] += 60.f;  // rows the max subtraction must save
  return z;
}

// Actions must agree except where the draw sits within rounding of a bucket edge (expf on the
// device and on the host may differ in the last bit).
void expect_same_actions(const std::vector<float>& z, const std::vector<int32_t>& got, const std::vector<int32_t>& want,
                         uint64_t seed, uint32_t epoch, uint32_t step) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    const PolicyRow r = policy_row(&z[3 * i]);
    const float u = action_uniform(seed, epoch, step, static_cast<uint32_t>(i));
    const float edge = std::fmin(std::fabs(u - r.p[0]), std::fabs(u - r.p[0] - r.p[1]));
    EXPECT_LT(edge, 1e-6f) << "row " << i << ": got " << got[i] << ", want " << want[i];
  }
}

TEST(PolicyHeadCuda, SampleActionsMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  for (int M : {1, 37, 1003}) {
    const auto z = logits_for(M, M);
    const uint64_t seed = 0x1234567890ull + M;
    const uint32_t epoch = 77, step = 5;
    std::vector<int32_t> want(M);
    std::vector<float> want_logp(M);
    sample_actions_host(z.data(), M, seed, &epoch, step, want.data(), want_logp.data());

    DeviceBuffer<float> dz(z), logp(poisoned(M));
    DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{epoch});
    DeviceBuffer<int32_t> actions(std::vector<int32_t>(M, -1));
    sample_actions_cuda(dz.get(), M, seed, depoch.get(), step, actions.get(), logp.get(), nullptr);
    const auto got = actions.download();
    expect_same_actions(z, got, want, seed, epoch, step);
    // log pi(a) of the action the device chose.
    std::vector<float> ref_logp(M);
    for (int i = 0; i < M; ++i) ref_logp[i] = policy_row(&z[3 * i]).logp[got[i]];
    EXPECT_TRUE(all_close(logp.download(), ref_logp)) << "M=" << M;

    DeviceBuffer<int32_t> again(std::vector<int32_t>(M, -1));  // without log-probs
    sample_actions_cuda(dz.get(), M, seed, depoch.get(), step, again.get(), nullptr, nullptr);
    EXPECT_EQ(again.download(), got) << "M=" << M;
  }
}

TEST(PolicyHeadCuda, ReplayedGraphReadsTheEpochFromDeviceMemory) {
  GRPO_REQUIRE_DEVICE();
  const int M = 203;
  const uint64_t seed = 5;
  std::vector<float> z(3 * M, 0.f);  // uniform policy: each epoch's draws show
  DeviceBuffer<float> dz(z);
  DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{0});
  DeviceBuffer<int32_t> actions(std::vector<int32_t>(M, -1));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  sample_actions_cuda(dz.get(), M, seed, depoch.get(), 3, actions.get(), nullptr, stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int32_t> previous;
  for (uint32_t epoch : {4u, 9u}) {
    depoch.upload({epoch});
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<int32_t> want(M);
    sample_actions_host(z.data(), M, seed, &epoch, 3, want.data(), nullptr);
    const auto got = actions.download();
    EXPECT_EQ(got, want) << "epoch " << epoch;  // p = 1/3 exactly on both sides: no edge cases
    EXPECT_NE(got, previous);
    previous = got;
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(PolicyHeadCuda, PolicyLossMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  for (int M : {1, 37, 1003, 5001}) {
    const auto z = logits_for(M, 100 + M);
    const auto adv = random_floats(M, 200 + M, -7.f, 7.f);
    std::vector<int32_t> act(M);
    std::mt19937 gen(M);
    for (auto& a : act) a = std::uniform_int_distribution<int>(0, 2)(gen);
    const float c = 0.05f;
    std::vector<float> want_dz(3 * size_t(M));
    float want_loss, want_ent;
    policy_loss_host(z.data(), act.data(), adv.data(), M, PolicyObjective{c}, want_dz.data(), &want_loss, &want_ent,
                     nullptr);

    DeviceBuffer<float> dz(z), dadv(adv), grad(poisoned(3 * size_t(M))), scalars(poisoned(4));
    DeviceBuffer<int32_t> dact(act);
    DeviceBuffer<float> scratch(poisoned(policy_loss_scratch_floats(M)));
    policy_loss_cuda(dz.get(), dact.get(), dadv.get(), M, PolicyObjective{c}, grad.get(), scalars.get(),
                     scalars.get() + 1, scratch.get(), nullptr);
    const auto got_dz = grad.download();
    EXPECT_TRUE(all_close(got_dz, want_dz, 1e-5 / M, 1e-4)) << "M=" << M;
    auto s = scalars.download();
    EXPECT_LE(std::fabs(s[0] - want_loss), 1e-5 * std::fabs(want_loss) + 1e-6) << "M=" << M;
    EXPECT_LE(std::fabs(s[1] - want_ent), 1e-5 * want_ent) << "M=" << M;

    // Again, without the entropy output: loss and gradient to the bit, slot 3 untouched.
    DeviceBuffer<float> grad2(poisoned(3 * size_t(M)));
    policy_loss_cuda(dz.get(), dact.get(), dadv.get(), M, PolicyObjective{c}, grad2.get(), scalars.get() + 2, nullptr,
                     scratch.get(), nullptr);
    EXPECT_EQ(std::memcmp(grad2.download().data(), got_dz.data(), got_dz.size() * sizeof(float)), 0);
    s = scalars.download();
    EXPECT_EQ(std::memcmp(&s[2], &s[0], sizeof(float)), 0) << "M=" << M;
    EXPECT_TRUE(std::isnan(s[3]));
  }
}

TEST(PolicyHeadCuda, GrpoLossAndActionLogProbsMatchHost) {
  GRPO_REQUIRE_DEVICE();
  for (int M : {1, 37, 1003, 5001}) {
    const auto z = logits_for(M, 400 + M);
    const auto adv = random_floats(M, 500 + M, -4.f, 4.f);
    std::vector<int32_t> act(M);
    std::mt19937 gen(M);
    for (auto& a : act) a = std::uniform_int_distribution<int>(0, 2)(gen);
    std::vector<float> want_lp(M);
    action_log_probs_host(z.data(), act.data(), M, want_lp.data());
    DeviceBuffer<float> dz(z), lp(poisoned(M));
    DeviceBuffer<int32_t> dact(act);
    action_log_probs_cuda(dz.get(), dact.get(), M, lp.get(), nullptr);
    EXPECT_TRUE(all_close(lp.download(), want_lp, 1e-6f, 1e-5f)) << "M=" << M;

    // Old log-probabilities shifted so that ratios land on both sides of the clip range.
    auto old = want_lp;
    const auto shift = random_floats(M, 600 + M, -0.5f, 0.5f);
    for (int i = 0; i < M; ++i) old[i] += shift[i];
    std::vector<float> want_dz(3 * size_t(M));
    float want_loss, want_ent;
    policy_loss_host(z.data(), act.data(), adv.data(), M, PolicyObjective{0.05f, old.data(), 0.2f, 0.1f},
                     want_dz.data(), &want_loss, &want_ent, nullptr);
    DeviceBuffer<float> dadv(adv), dold(old), grad(poisoned(3 * size_t(M))), scalars(poisoned(2));
    DeviceBuffer<float> scratch(poisoned(policy_loss_scratch_floats(M)));
    policy_loss_cuda(dz.get(), dact.get(), dadv.get(), M, PolicyObjective{0.05f, dold.get(), 0.2f, 0.1f}, grad.get(),
                     scalars.get(), scalars.get() + 1, scratch.get(), nullptr);
    EXPECT_TRUE(all_close(grad.download(), want_dz, 1e-5f / M, 1e-4f)) << "M=" << M;
    const auto s = scalars.download();
    EXPECT_LE(std::fabs(s[0] - want_loss), 1e-5 * std::fabs(want_loss) + 1e-6) << "M=" << M;
    EXPECT_LE(std::fabs(s[1] - want_ent), 1e-5 * want_ent) << "M=" << M;
  }
}

}  // namespace
}  // namespace grpo
