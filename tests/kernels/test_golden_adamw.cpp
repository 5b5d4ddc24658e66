// Grad norm, clip factor and one AdamW step of the host twins vs PyTorch (float64) golden values
// from tools/make_golden.py (tests/fixtures/golden_tiny.json; its header documents the format).
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/adamw.h"
#include "kernels/grad_norm.h"
#include "kernels/train_scalars.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::rel_l2;

nlohmann::json load_fixture() {
  const std::string path = std::string(GRPO_SOURCE_DIR) + "/tests/fixtures/golden_tiny.json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path + " (regenerate: /usr/bin/python3 tools/make_golden.py)");
  return nlohmann::json::parse(f);
}

// The named tensors of one section concatenated in the fixture's slab order.
template <class T>
std::vector<T> slab(const nlohmann::json& fx, const nlohmann::json& section) {
  std::vector<T> out;
  for (const auto& name : fx.at("param_order"))
    for (double v : section.at(name.get<std::string>())) out.push_back(static_cast<T>(v));
  return out;
}

TEST(GoldenAdamW, GradNormClipAndOneStepMatchPyTorch) {
  const nlohmann::json fx = load_fixture();
  ASSERT_EQ(fx.at("format"), "grpo-golden-1");
  const auto& cfg = fx.at("config");
  const auto p0 = slab<float>(fx, fx.at("params"));
  const auto grads = slab<float>(fx, fx.at("grads"));
  ASSERT_EQ(p0.size(), grads.size());
  ASSERT_EQ(p0.size() % 4, 3u) << "the slab should not be a multiple of 4 (tail path)";

  TrainScalars s = train_scalars_start(cfg.at("lr").get<float>());
  s.grad_norm = s.clip_scale = test::poison_value();
  grad_norm_host(grads.data(), grads.size(), &s, cfg.at("max_norm").get<float>(), nullptr);
  const double want_norm = fx.at("grad_norm"), want_clip = fx.at("clip_scale");
  EXPECT_LE(std::fabs(s.grad_norm - want_norm), 1e-5 * want_norm);
  EXPECT_LE(std::fabs(s.clip_scale - want_clip), 1e-5 * want_clip);
  ASSERT_LT(want_clip, 1.0);  // the fixture exercises clipping
  EXPECT_EQ(s.nonfinite, 0u);

  AdamWConfig ac;
  ac.beta1 = cfg.at("beta1");
  ac.beta2 = cfg.at("beta2");
  ac.eps = cfg.at("eps");
  ac.weight_decay = cfg.at("weight_decay");
  auto p = p0;
  std::vector<float> m(p.size(), 0.f), v(p.size(), 0.f);
  adamw_host(p.data(), grads.data(), m.data(), v.data(), p.size(), &s, ac);

  const auto& after = fx.at("adamw");
  const auto want_p = slab<double>(fx, after.at("params"));
  const auto want_m = slab<double>(fx, after.at("exp_avg"));
  const auto want_v = slab<double>(fx, after.at("exp_avg_sq"));
  EXPECT_LE(rel_l2(p, want_p), 1e-5);
  EXPECT_LE(rel_l2(m, want_m), 1e-5);
  EXPECT_LE(rel_l2(v, want_v), 1e-5);
  // The update itself (about lr per element) against PyTorch's: limited by float32 rounding of
  // the parameters (half an ulp of |p| < 1 is <= 6e-8, i.e. 6e-5 of a 1e-3 update).
  std::vector<double> got_delta(p.size()), want_delta(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    got_delta[i] = double(p[i]) - double(p0[i]);
    want_delta[i] = want_p[i] - double(p0[i]);
  }
  EXPECT_LE(rel_l2(got_delta, want_delta), 1e-4);

  advance_schedule_host(&s);
  EXPECT_EQ(s.adam_step, 1u);  // PyTorch's state['step'] after one step
}

}  // namespace
}  // namespace grpo
