// The spec's network composed from the ops (engine/policy.cpp) against PyTorch's float64
// forward, loss, gradients and one clipped AdamW step (tests/fixtures/golden_tiny.json, written
// by tools/make_golden.py). Shared by the host-ops and the CUDA-ops test.
#pragma once
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/layout.h"
#include "engine/policy.h"
#include "tests/test_util.h"

namespace grpo::test {

// Where the ops' memory lives: plain host memory, or the device.
struct Memory {
  std::function<void*(size_t bytes)> alloc;
  std::function<void(void* dst, const void* src, size_t bytes)> upload;
  std::function<void(void* dst, const void* src, size_t bytes)> download;  // synchronises
};

// Row-major flattening of nested arrays (json::flatten orders keys as strings: not usable).
inline void flatten_into(const nlohmann::json& j, std::vector<double>& out) {
  if (j.is_array())
    for (const auto& x : j) flatten_into(x, out);
  else
    out.push_back(j.get<double>());
}
inline std::vector<double> flat(const nlohmann::json& j) {
  std::vector<double> v;
  flatten_into(j, v);
  return v;
}

inline void run_golden(Ops& ops, const Memory& mem) {
  std::ifstream f(std::string(GRPO_SOURCE_DIR) + "/tests/fixtures/golden_tiny.json");
  ASSERT_TRUE(f) << "missing tests/fixtures/golden_tiny.json";
  const nlohmann::json g = nlohmann::json::parse(f);
  const int H = g["config"]["hidden"], D = g["config"]["input"], M = g["config"]["samples"];
  const float entropy_coef = g["config"]["entropy_coef"], max_norm = g["config"]["max_norm"];
  const ParamLayout l(H, D);

  // Parameters into a slab, laid out by name.
  std::vector<float> slab(l.total, 0.f);
  for (const ParamTensor& t : l.tensors) {
    const std::vector<double> v = flat(g["params"][t.name]);
    ASSERT_EQ(v.size(), t.size()) << t.name;
    for (size_t i = 0; i < v.size(); ++i) slab[t.offset + i] = float(v[i]);
  }
  auto dev = [&](size_t floats) { return static_cast<float*>(mem.alloc(std::max<size_t>(floats, 1) * 4)); };
  auto put = [&](const std::vector<float>& v) {
    float* p = dev(v.size());
    mem.upload(p, v.data(), v.size() * 4);
    return p;
  };
  auto get = [&](const float* p, size_t n) {
    std::vector<float> v(n);
    mem.download(v.data(), p, n * 4);
    return v;
  };
  std::vector<float> x;
  for (double d : flat(g["inputs"]["x"])) x.push_back(float(d));
  std::vector<int32_t> actions;
  for (double d : flat(g["inputs"]["actions"])) actions.push_back(int32_t(d));
  std::vector<float> adv;
  for (double d : flat(g["inputs"]["advantages"])) adv.push_back(float(d));

  float* params = put(slab);
  // Gradients poisoned where the ops must write, zero in the padding (as the executors keep it).
  std::vector<float> grads0(l.total, 0.f);
  for (const ParamTensor& t : l.tensors) std::fill_n(grads0.begin() + t.offset, t.size(), poison_value());
  float* grads = put(grads0);
  float* X = put(x);
  auto* act = static_cast<int32_t*>(mem.alloc(actions.size() * 4));
  mem.upload(act, actions.data(), actions.size() * 4);
  float* A = put(adv);
  const size_t MH = size_t(M) * H;
  PolicyActs a{put(poisoned(MH)),           put(poisoned(MH)), put(poisoned(MH)), put(poisoned(MH)),
               put(poisoned(M * kActions)), put(poisoned(M)),  put(poisoned(M))};
  float* trunk_work = put(poisoned(MH));
  float* dlogits = put(poisoned(M * kActions));
  float* scratch = put(std::vector<float>(1 << 16, 0.f));
  float* loss = put(poisoned(1));
  const ParamViews p = ParamViews::over(params, l), gv = ParamViews::over(grads, l);

  const DropoutSpec no_dropout{};
  policy_forward(ops, p, X, M, D, H, a, no_dropout);
  auto expect_close = [&](const float* got, const nlohmann::json& ref, size_t n, const char* what) {
    const std::vector<double> r = flat(ref);
    ASSERT_EQ(r.size(), n) << what;
    EXPECT_LE(rel_l2(get(got, n), r), 1e-5) << what;
  };
  expect_close(a.h0, g["forward"]["h0"], MH, "h0");
  expect_close(a.ln_mean, g["forward"]["ln_mean"], M, "ln_mean");
  expect_close(a.ln_rstd, g["forward"]["ln_rstd"], M, "ln_rstd");
  expect_close(a.h1, g["forward"]["h1"], MH, "h1");
  expect_close(a.h2, g["forward"]["h2"], MH, "h2");
  expect_close(a.logits, g["forward"]["logits"], M * kActions, "logits");

  ops.policy_loss(a.logits, act, A, M, PolicyObjective{entropy_coef}, dlogits, loss, nullptr, scratch);
  const double want_loss = g["loss"];
  EXPECT_NEAR(get(loss, 1)[0], want_loss, 1e-5 * std::fabs(want_loss)) << "loss";
  policy_backward(ops, p, gv, X, dlogits, M, D, H, a, no_dropout, trunk_work, scratch);
  const std::vector<float> got_grads = get(grads, l.total);
  for (const ParamTensor& t : l.tensors) {
    const std::vector<double> r = flat(g["grads"][t.name]);
    const std::vector<float> mine(got_grads.begin() + t.offset, got_grads.begin() + t.offset + t.size());
    EXPECT_LE(rel_l2(mine, r), 1e-5) << "gradient of " << t.name;
  }

  // The loss pass as training_step runs it: the trunk's activations kept, then the head, the
  // loss and every gradient as one op (HostOps fuses the head and works in blocks of rows).
  {
    float* grads_step = put(grads0);
    const ParamViews gs = ParamViews::over(grads_step, l);
    float* loss_step = put(poisoned(1));
    float* logits_step = put(poisoned(M * kActions));
    policy_trunk_forward(ops, p, X, M, D, H, a);
    Ops::HeadLoss h{};
    h.a1 = a.a1;
    h.b1 = p.fc1_b;
    h.w_out = p.fc_out_w;
    h.b_out = p.fc_out_b;
    h.actions = act;
    h.adv = A;
    h.M = M;
    h.H = H;
    h.objective = PolicyObjective{entropy_coef};
    h.drop = no_dropout;
    h.logits = logits_step;
    h.dlogits = dlogits;
    h.h2 = a.h2;
    h.dh2 = trunk_work;
    h.da1 = a.h2;
    h.g_b1 = gs.fc1_b;
    h.g_w_out = gs.fc_out_w;
    h.g_b_out = gs.fc_out_b;
    h.loss = loss_step;
    h.scratch = scratch;
    ops.loss_pass(Ops::LossPass{h, p, gs, a, X, D, trunk_work});
    expect_close(logits_step, g["forward"]["logits"], M * kActions, "logits (loss_pass)");
    EXPECT_NEAR(get(loss_step, 1)[0], want_loss, 1e-5 * std::fabs(want_loss)) << "loss (loss_pass)";
    const std::vector<float> step_grads = get(grads_step, l.total);
    for (const ParamTensor& t : l.tensors) {
      const std::vector<float> mine(step_grads.begin() + t.offset, step_grads.begin() + t.offset + t.size());
      EXPECT_LE(rel_l2(mine, flat(g["grads"][t.name])), 1e-5) << "gradient of " << t.name << " (step's loss pass)";
    }
  }

  // The optimiser on top: global norm, clip factor, one AdamW step from zero moments.
  TrainScalars s = train_scalars_start(float(g["config"]["lr"]));
  auto* sd = static_cast<TrainScalars*>(mem.alloc(sizeof s));
  mem.upload(sd, &s, sizeof s);
  float* m = put(std::vector<float>(l.total, 0.f));
  float* v = put(std::vector<float>(l.total, 0.f));
  ops.grad_norm(grads, l.total, sd, max_norm, scratch);
  AdamWConfig cfg;
  cfg.weight_decay = g["config"]["weight_decay"];
  ops.adamw(params, grads, m, v, l.total, sd, cfg, Bf16Copy{});
  mem.download(&s, sd, sizeof s);
  const double want_norm = g["grad_norm"], want_clip = g["clip_scale"];
  EXPECT_NEAR(s.grad_norm, want_norm, 1e-5 * want_norm);
  EXPECT_NEAR(s.clip_scale, want_clip, 1e-5 * want_clip);
  const std::vector<float> p1 = get(params, l.total), m1 = get(m, l.total), v1 = get(v, l.total);
  for (const ParamTensor& t : l.tensors) {
    auto slice = [&](const std::vector<float>& all) {
      return std::vector<float>(all.begin() + t.offset, all.begin() + t.offset + t.size());
    };
    EXPECT_LE(rel_l2(slice(p1), flat(g["adamw"]["params"][t.name])), 1e-5) << "AdamW params " << t.name;
    EXPECT_LE(rel_l2(slice(m1), flat(g["adamw"]["exp_avg"][t.name])), 1e-5) << "AdamW m " << t.name;
    EXPECT_LE(rel_l2(slice(v1), flat(g["adamw"]["exp_avg_sq"][t.name])), 1e-5) << "AdamW v " << t.name;
  }
}

}  // namespace grpo::test
