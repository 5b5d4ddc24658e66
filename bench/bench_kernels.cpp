// Kernel benchmark of the host twins (the ops the host executor trains on), at the rollout and
// loss-pass shapes of the small and reference-default configurations: steady-clock median time
// per call, FLOPs and minimum bytes per call, GFLOP/s or GB/s and the fraction of the ceiling
// measured here (OpenBLAS sgemm, memcpy). The per-row ops run at every shape; the per-parameter
// ops (grad_norm, adamw over the H x H fc1 weight) and the per-sample ones of the loss pass
// (policy_loss, returns, advantages, means) only at the loss shapes, sampling only at the
// rollout's. --json writes the rows.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/parse_flags.h"
#include "bench/host_ceiling.h"
#include "kernels/adamw.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/policy_head.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"
#include "kernels/train_scalars.h"

int main(int argc, char** argv) {
  using namespace grpo;
  CLI::App app{"bench_kernels: host twins against the measured sgemm and copy ceilings"};
  std::string json_path;
  int repeats = 7;
  app.add_option("--repeats", repeats, "timed calls per op (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "also write the rows as JSON");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_kernels")) return *code;

  const double gf = bench::sgemm_gflops(1024, 5), gbs = bench::copy_gbps(size_t(256) << 20, 5);
  std::printf("host ceilings: sgemm 1024^3 %.1f GFLOP/s, memcpy %.1f GB/s\n\n", gf, gbs);
  std::printf("%-34s %-14s %10s %10s %10s %9s %7s\n", "op", "shape", "us/call", "MFLOP", "MB", "rate", "%ceil");
  nlohmann::json rows = nlohmann::json::array();
  struct Shape {
    const char* name;
    int M, H, N;  // rows, hidden width, games (the rollout's rows per step)
  };
  const int D = 10;
  const uint32_t epoch = 3;
  for (const Shape s :
       {Shape{"small rollout", 136, 512, 136}, Shape{"small loss", 27200, 512, 136},
        Shape{"reference rollout", 544, 2048, 544}, Shape{"reference loss, 8192 of 54400 rows", 8192, 2048, 544}}) {
    const size_t MH = size_t(s.M) * s.H;
    const auto x = bench::filled(MH, 1), w = bench::filled(size_t(s.H) * s.H, 2), b = bench::filled(s.H, 3),
               obs = bench::filled(size_t(s.M) * D, 4), win = bench::filled(size_t(s.H) * D, 5);
    std::vector<float> y(MH), z(MH), mean(s.M), rstd(s.M), dw(size_t(s.H) * s.H), db(s.H), dg(s.H),
        scratch(2 * layernorm_residual_backward_scratch_floats(s.M, s.H)),
        lnin(layernorm_input_backward_partial_floats(s.M, s.H, D));
    const DropoutSpec drop{0.1f, 42, Purpose::DropoutLoss, &epoch, 0};
    const double fmm = 2.0 * MH * s.H, act = 4.0 * MH;
    const size_t P = size_t(s.H) * s.H;  // the parameter ops run over fc1.weight's count
    const bool rollout = s.M == s.N;
    const auto logits = bench::filled(size_t(s.M) * 3, 7), adv = bench::filled(s.M, 8);
    std::vector<float> grads = bench::filled(P, 9), m(P), v(P), params = bench::filled(P, 10), dlogits(size_t(s.M) * 3),
                       ret(s.M), stats(8),
                       red_scratch(std::max({grad_norm_scratch_floats(P), normalize_advantages_scratch_floats(s.M),
                                             policy_loss_scratch_floats(s.M), mean_scratch_floats(s.M)})),
                       out(4), logp(s.M);
    std::vector<int32_t> actions(s.M, 1);
    TrainScalars ts{};
    ts.lr = 1e-4f, ts.clip_scale = 1.f;
    const AdamWConfig adam{};
    struct Op {
      const char* name;
      double flops, bytes;
      std::function<void()> f;
    };
    std::vector<Op> ops = {
        {"linear_forward fc_in", 2.0 * MH * D, 4.0 * (s.M * D + MH),
         [&] { linear_forward_host(obs.data(), win.data(), nullptr, y.data(), s.M, s.H, D); }},
        {"linear_forward fc1", fmm, act * 2 + 4.0 * s.H * s.H,
         [&] { linear_forward_host(x.data(), w.data(), nullptr, y.data(), s.M, s.H, s.H); }},
        {"linear_backward_input fc1", fmm, act * 2 + 4.0 * s.H * s.H,
         [&] { linear_backward_input_host(x.data(), w.data(), y.data(), s.M, s.H, s.H); }},
        {"linear_forward head (3 outputs)", 2.0 * MH * 3, act + 12.0 * s.M,
         [&] { linear_forward_host(x.data(), w.data(), b.data(), y.data(), s.M, 3, s.H); }},
        {"linear_backward_weight fc1", fmm, act * 2 + 4.0 * s.H * s.H,
         [&] { linear_backward_weight_host(x.data(), z.data(), dw.data(), s.M, s.H, s.H, false); }},
        {"linear_backward_weight fc_in", 2.0 * MH * D, 4.0 * (s.M * D + MH),
         [&] { linear_backward_weight_host(x.data(), obs.data(), dw.data(), s.M, s.H, D, false); }},
        {"layernorm_residual_forward", 0, act * 2,
         [&] {
           layernorm_residual_forward_host(x.data(), b.data(), b.data(), y.data(), mean.data(), rstd.data(), s.M, s.H);
         }},
        {"layernorm_residual_backward", 0, act * 3,
         [&] {
           layernorm_residual_backward_host(z.data(), x.data(), b.data(), mean.data(), rstd.data(), y.data(), dg.data(),
                                            db.data(), s.M, s.H, scratch.data());
         }},
        {"layernorm_input_backward (+fc_in dW)", 2.0 * MH * D, act * 2 + 4.0 * s.M * D,
         [&] {
           layernorm_input_backward_host(z.data(), x.data(), obs.data(), b.data(), mean.data(), rstd.data(), dg.data(),
                                         db.data(), dw.data(), s.M, s.H, D, lnin.data());
         }},
        {"bias_gelu_dropout_forward", 0, act * 2,
         [&] { bias_gelu_dropout_forward_host(x.data(), b.data(), y.data(), s.M, s.H, drop); }},
        {"bias_gelu_dropout_backward", 0, act * 3,
         [&] {
           bias_gelu_dropout_backward_host(z.data(), x.data(), b.data(), y.data(), db.data(), s.M, s.H, drop,
                                           scratch.data());
         }},
    };
    if (rollout) {
      ops.push_back({"sample_actions", 0, 20.0 * s.M,
                     [&] { sample_actions_host(logits.data(), s.M, 42, &epoch, 5, actions.data(), logp.data()); }});
    } else {
      const int T = s.M / s.N;
      ops.push_back({"policy_loss", 0, 32.0 * s.M, [&] {
                       policy_loss_host(logits.data(), actions.data(), adv.data(), s.M, PolicyObjective{},
                                        dlogits.data(), &out[0], &out[1], red_scratch.data());
                     }});
      ops.push_back({"policy_loss (grpo: ratio, clip, KL)", 0, 36.0 * s.M, [&] {
                       policy_loss_host(logits.data(), actions.data(), adv.data(), s.M,
                                        PolicyObjective{0.01f, logp.data(), 0.2f, 0.1f}, dlogits.data(), &out[0],
                                        &out[1], red_scratch.data());
                     }});
      ops.push_back({"action_log_probs", 0, 20.0 * s.M,
                     [&] { action_log_probs_host(logits.data(), actions.data(), s.M, logp.data()); }});
      // Groups of 8 replicas (the small preset's --batch-size) where the games divide evenly.
      const int R = s.N % 8 == 0 ? 8 : 1;
      ops.push_back({"group_normalize_rewards", 0, 12.0 * s.M,
                     [&, T, R] { group_normalize_rewards_host(adv.data(), ret.data(), T, s.N / R, R, nullptr); }});
      ops.push_back({"discounted_returns", 0, 8.0 * T * s.N,
                     [&, T] { discounted_returns_host(adv.data(), ret.data(), T, s.N, 0.99f); }});
      ops.push_back({"normalize_advantages", 0, 8.0 * s.M, [&] {
                       normalize_advantages_host(adv.data(), ret.data(), s.M, red_scratch.data(), stats.data());
                     }});
      ops.push_back({"mean_f32", 0, 4.0 * s.M, [&] { mean_f32_host(adv.data(), s.M, &out[2], red_scratch.data()); }});
      ops.push_back({"grad_norm (fc1.weight)", 0, 4.0 * P,
                     [&] { grad_norm_host(grads.data(), P, &ts, 1.f, red_scratch.data()); }});
      ops.push_back({"adamw (fc1.weight)", 0, 28.0 * P,
                     [&] { adamw_host(params.data(), grads.data(), m.data(), v.data(), P, &ts, adam); }});
    }
    z = x;
    for (const Op& op : ops) {
      const double t = bench::time_median(op.f, repeats);
      const bool compute = op.flops > 0;
      const double rate = compute ? op.flops / t * 1e-9 : op.bytes / t * 1e-9;
      const double frac = rate / (compute ? gf : gbs);
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", s.M, s.H);
      std::printf("%-34s %-14s %10.1f %10.2f %10.2f %6.1f %s %6.1f%%   (%s)\n", op.name, shape, t * 1e6,
                  op.flops * 1e-6, op.bytes * 1e-6, rate, compute ? "GF/s" : "GB/s", 100 * frac, s.name);
      rows.push_back({{"op", op.name},
                      {"case", s.name},
                      {"M", s.M},
                      {"H", s.H},
                      {"us", t * 1e6},
                      {"flops", op.flops},
                      {"bytes", op.bytes},
                      {"rate", rate},
                      {"unit", compute ? "GFLOP/s" : "GB/s"},
                      {"fraction", frac}});
    }
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) return std::fprintf(stderr, "bench_kernels: error: cannot write %s\n", json_path.c_str()), 1;
    f << nlohmann::json{{"bench", "bench_kernels"}, {"sgemm_gflops", gf}, {"copy_gbps", gbs}, {"rows", rows}}.dump(2)
      << "\n";
  }
  return 0;
}
