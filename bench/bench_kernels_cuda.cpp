// Kernel benchmark of the CUDA ops at the rollout and loss-pass shapes of the small and
// reference-default configurations: CUDA events around each call with L2 flushed before it
// (cold caches, as in a training epoch where activations stream through), median of repeats;
// FLOPs and minimum bytes per call, GFLOP/s or GB/s and the fraction of the ceilings measured
// here (device copy bandwidth, a large fp32 cuBLAS GEMM). The per-row ops run at every shape;
// the per-parameter ops (grad_norm, adamw over the H x H fc1 weight) and the loss pass's
// per-sample ones (policy_loss, the two-pass head, returns, advantages, means) at the loss shapes, sampling at the
// rollout's, with the fused rollout step (engine/cuda/rollout_step.cu). --json writes the rows.
// On the SIMT build the "device" is the CPU emulator: timings are meaningless, so it says so and
// runs one tiny call of each op as a smoke test.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/parse_flags.h"
#include "bench/device_ceiling.h"
#include "bench/host_ceiling.h"
#include "core/cuda_check.h"
#include "engine/cuda/rollout_step.h"
#include "env/games.h"
#include "kernels/adamw.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/head_loss.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/policy_head.h"
#include "kernels/reduce.h"
#include "kernels/returns.h"
#include "kernels/train_scalars.h"

namespace {

using namespace grpo;

// A device array filled from the host with values in [-1, 1).
struct Dev {
  float* p = nullptr;
  explicit Dev(size_t n, unsigned seed = 0) {
    CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(float)));
    if (seed) {
      const auto h = bench::filled(n, seed);
      CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

struct Shape {
  const char* name;
  int M, H, N;         // rows, hidden width, games (the rollout's rows per step)
  bool every = false;  // every op at this shape (the emulator's smoke run)
};

struct Op {
  const char* name;
  double flops, bytes;
  std::function<void()> f;
};

// The ops of one shape, on buffers that live as long as the returned object.
struct Case {
  Shape s;
  Dev x, w, b, obs, win, y, z, mean, rstd, dw, db, dg, scratch, epoch_buf;
  Dev logits, adv, ret, dlogits, actions, logp, stats, out, scalars, params, grads, m, v, red, games;
  Dev xb, wb, zb;  // bf16 copies of x, w and z (--precision bf16), in float-sized storage
  std::vector<Op> ops;
  static constexpr int D = 10;

  // blas runs fp32 products, tf32 the same in TF32 (the bf16 products do not depend on either).
  Case(Shape sh, Blas& blas, Blas& tf32, cudaStream_t st)
      : s(sh),
        x(size_t(sh.M) * sh.H, 1),
        w(size_t(sh.H) * sh.H, 2),
        b(sh.H, 3),
        obs(size_t(sh.M) * D, 4),
        win(size_t(sh.H) * D, 5),
        y(size_t(sh.M) * sh.H),
        z(size_t(sh.M) * sh.H, 6),
        mean(sh.M),
        rstd(sh.M),
        dw(size_t(sh.H) * sh.H),
        db(sh.H),
        dg(sh.H),
        scratch(2 *
                std::max({layernorm_residual_backward_scratch_floats(sh.M, sh.H),
                          bias_gelu_dropout_backward_scratch_floats(sh.M, sh.H), head_loss_scratch_floats(sh.M, sh.H),
                          layernorm_input_backward_scratch_floats(sh.M, sh.H, D)})),
        epoch_buf(1),
        logits(size_t(sh.M) * 3, 7),
        adv(sh.M, 8),
        ret(sh.M),
        dlogits(size_t(sh.M) * 3),
        actions(sh.M),
        logp(sh.M),
        stats(8),
        out(4),
        scalars(sizeof(TrainScalars) / sizeof(float)),
        params(size_t(sh.H) * sh.H, 9),
        grads(size_t(sh.H) * sh.H, 10),
        m(size_t(sh.H) * sh.H),
        v(size_t(sh.H) * sh.H),
        red(std::max({grad_norm_scratch_floats(size_t(sh.H) * sh.H), normalize_advantages_scratch_floats(sh.M),
                      policy_loss_scratch_floats(sh.M), mean_scratch_floats(sh.M)})),
        games(games_state_bytes(GameConfig{}, sh.M) / sizeof(float) + 1),
        xb(size_t(sh.M) * sh.H / 2 + 1),
        wb(size_t(sh.H) * sh.H / 2 + 1),
        zb(size_t(sh.M) * sh.H / 2 + 1) {
    // Every game at the all-zero state (sprite at column 0, no fruit): a valid state to step.
    CUDA_CHECK(cudaMemset(games.p, 0, games_state_bytes(GameConfig{}, sh.M)));
    CUDA_CHECK(cudaMemset(epoch_buf.p, 0, sizeof(uint32_t)));
    CUDA_CHECK(cudaMemset(actions.p, 0, size_t(sh.M) * sizeof(int32_t)));  // action 0: valid
    CUDA_CHECK(cudaMemset(m.p, 0, size_t(sh.H) * sh.H * sizeof(float)));
    CUDA_CHECK(cudaMemset(v.p, 0, size_t(sh.H) * sh.H * sizeof(float)));
    TrainScalars ts{};
    ts.lr = 1e-4f, ts.clip_scale = 1.f;
    CUDA_CHECK(cudaMemcpy(scalars.p, &ts, sizeof ts, cudaMemcpyHostToDevice));
    const int M = s.M, H = s.H;
    const double MH = double(M) * H, fmm = 2.0 * MH * H, act = 4.0 * MH;
    const bool ln_one_pass = layernorm_onepass::fits_device(H, D);
    const DropoutSpec drop{0.1f, 42, Purpose::DropoutLoss, reinterpret_cast<const uint32_t*>(epoch_buf.p), 0};
    Blas* bl = &blas;
    Blas* tf = &tf32;
    Bf16 *x16 = reinterpret_cast<Bf16*>(xb.p), *w16 = reinterpret_cast<Bf16*>(wb.p),
         *z16 = reinterpret_cast<Bf16*>(zb.p);
    to_bf16_cuda(x.p, x16, size_t(M) * H, st);
    to_bf16_cuda(w.p, w16, size_t(H) * H, st);
    to_bf16_cuda(z.p, z16, size_t(M) * H, st);
    const double act16 = 2.0 * MH;
    ops = {
        {"linear_forward fc_in", 2.0 * MH * D, 4.0 * (M * D + MH),
         [=] { linear_forward_cuda(*bl, obs.p, win.p, nullptr, y.p, M, H, D, st); }},
        {"linear_forward fc1", fmm, act * 2 + 4.0 * H * H,
         [=] { linear_forward_cuda(*bl, x.p, w.p, nullptr, y.p, M, H, H, st); }},
        {"linear_backward_input fc1", fmm, act * 2 + 4.0 * H * H,
         [=] { linear_backward_input_cuda(*bl, x.p, w.p, y.p, M, H, H, st); }},
        {"linear_backward_weight fc1", fmm, act * 2 + 4.0 * H * H,
         [=] { linear_backward_weight_cuda(*bl, x.p, z.p, dw.p, M, H, H, false, st); }},
        {"linear_forward fc1 TF32", fmm, act * 2 + 4.0 * H * H,
         [=] { linear_forward_cuda(*tf, x.p, w.p, nullptr, y.p, M, H, H, st); }},
        {"linear_backward_weight fc1 TF32", fmm, act * 2 + 4.0 * H * H,
         [=] { linear_backward_weight_cuda(*tf, x.p, z.p, dw.p, M, H, H, false, st); }},
        {"linear_forward fc1 bf16", fmm, act16 + act + 2.0 * H * H,
         [=] { linear_forward_bf16_cuda(*bl, x16, w16, nullptr, y.p, M, H, H, st); }},
        {"linear_backward_input fc1 bf16", fmm, act16 + act + 2.0 * H * H,
         [=] { linear_backward_input_bf16_cuda(*bl, x16, w16, y.p, M, H, H, st); }},
        {"linear_backward_weight fc1 bf16", fmm, act16 * 2 + 4.0 * H * H,
         [=] { linear_backward_weight_bf16_cuda(*bl, x16, z16, dw.p, M, H, H, false, st); }},
        {"to_bf16 (an [M, H] copy)", 0, act + act16, [=] { to_bf16_cuda(z.p, z16, size_t(M) * H, st); }},
        {"layernorm_residual_forward", 0, act * 2,
         [=] { layernorm_residual_forward_cuda(x.p, b.p, b.p, y.p, mean.p, rstd.p, M, H, st); }},
        {"layernorm_residual_backward", 0, act * 3,
         [=] {
           layernorm_residual_backward_cuda(z.p, x.p, b.p, mean.p, rstd.p, y.p, dg.p, db.p, M, H, scratch.p, st);
         }},
        // One pass (h0 recomputed, dh1 read once) at the presets' widths, else two passes over
        // dh1 and h0; params stands in for W_in.
        {ln_one_pass ? "layernorm_input_backward (one pass, h0 recomputed)"
                     : "layernorm_input_backward (two passes, dW_in too)",
         (ln_one_pass ? 4.0 : 2.0) * MH * D, (ln_one_pass ? act : act * 4) + 4.0 * M * D,
         [=] {
           layernorm_input_backward_cuda(z.p, x.p, obs.p, params.p, b.p, mean.p, rstd.p, dg.p, db.p, win.p, M, H, D,
                                         scratch.p, st);
         }},
        {"bias_gelu_dropout_forward", 0, act * 2,
         [=] { bias_gelu_dropout_forward_cuda(x.p, b.p, y.p, M, H, drop, st); }},
        {"bias_gelu_dropout_backward", 0, act * 3,
         [=] { bias_gelu_dropout_backward_cuda(z.p, x.p, b.p, y.p, db.p, M, H, drop, scratch.p, st); }},
    };
    const uint32_t* ep = reinterpret_cast<const uint32_t*>(epoch_buf.p);
    int32_t* act_i = reinterpret_cast<int32_t*>(actions.p);
    auto* ts_d = reinterpret_cast<TrainScalars*>(scalars.p);
    const size_t P = size_t(H) * H;
    const int N = s.N, T = M / N;
    if (s.every || M == N) {
      ops.push_back(
          {"sample_actions", 0, 20.0 * M, [=] { sample_actions_cuda(logits.p, M, 42, ep, 5, act_i, logp.p, st); }});
      // One rollout step after its fc1 product, M games (Ops::rollout_step): parameters from the
      // buffers above (fc_out's 3 x H rows are the first of w), a1 = x, next step into y and z.
      const GameConfig game{};
      Ops::RolloutStep rs{};
      rs.p = ParamViews{win.p, b.p, b.p, w.p, b.p, w.p, b.p};
      rs.p.fc_in_w_t = params.p;  // H x H floats: room for fc_in's transposed D x H
      rs.now.a1 = x.p, rs.now.logits = logits.p;
      rs.next.h0 = y.p, rs.next.h1 = z.p, rs.next.ln_mean = mean.p, rs.next.ln_rstd = rstd.p;
      rs.obs_next = obs.p, rs.actions = act_i, rs.rewards = ret.p;
      rs.games = make_games_view(game, M, games.p);
      rs.seed = 42, rs.epoch = ep, rs.dropout = 0.1f, rs.t = 5, rs.N = M, rs.D = D, rs.H = H;
      ops.push_back({"rollout_step (fused)", 2.0 * MH * (3 + D), 12.0 * MH + 164.0 * M,
                     [=] { rollout_step_cuda(game, rs, st); }});
    }
    if (s.every || M > N) {
      const AdamWConfig adam{};
      ops.push_back({"policy_loss", 0, 32.0 * M, [=] {
                       policy_loss_cuda(logits.p, act_i, adv.p, M, PolicyObjective{}, dlogits.p, out.p, out.p + 1,
                                        red.p, st);
                     }});
      ops.push_back({"policy_loss (grpo: ratio, clip, KL)", 0, 36.0 * M, [=] {
                       policy_loss_cuda(logits.p, act_i, adv.p, M, PolicyObjective{0.01f, logp.p, 0.2f, 0.1f},
                                        dlogits.p, out.p, out.p + 1, red.p, st);
                     }});
      // The loss pass's head (kernels/head_loss.cu): a1 = x, fc_out's 3 x H rows the first of w.
      const HeadLossArgs head{x.p,  b.p,      w.p,       b.p, act_i, adv.p, M,    H,     PolicyObjective{},
                              drop, logits.p, dlogits.p, y.p, db.p,  dw.p,  dg.p, out.p, scratch.p};
      // One pass up to H = 2048: a1 in, da1 out; wider, two passes read a1 twice.
      const bool one_pass = head_loss::one_pass(H).groups_per_thread > 0;
      ops.push_back({one_pass ? "head_loss (one pass)" : "head_loss (two passes)", 2.0 * MH * 3 * 2,
                     (one_pass ? 8.0 : 12.0) * MH + 48.0 * M, [=] { head_loss_cuda(head, st); }});
      ops.push_back({"action_log_probs", 0, 20.0 * M, [=] { action_log_probs_cuda(logits.p, act_i, M, logp.p, st); }});
      const int R = N % 8 == 0 ? 8 : 1;  // groups of 8 replicas (the small preset's --batch-size)
      ops.push_back({"group_normalize_rewards", 0, 12.0 * M,
                     [=] { group_normalize_rewards_cuda(adv.p, ret.p, T, N / R, R, nullptr, st); }});
      ops.push_back(
          {"discounted_returns", 0, 8.0 * T * N, [=] { discounted_returns_cuda(adv.p, ret.p, T, N, 0.99f, st); }});
      ops.push_back({"normalize_advantages", 0, 8.0 * M,
                     [=] { normalize_advantages_cuda(adv.p, ret.p, M, red.p, stats.p, st); }});
      ops.push_back({"mean_f32", 0, 4.0 * M, [=] { mean_f32_cuda(adv.p, M, out.p + 2, red.p, st); }});
      ops.push_back({"grad_norm (fc1.weight)", 0, 4.0 * P, [=] { grad_norm_cuda(grads.p, P, ts_d, 1.f, red.p, st); }});
      ops.push_back(
          {"adamw (fc1.weight)", 0, 28.0 * P, [=] { adamw_cuda(params.p, grads.p, m.p, v.p, P, ts_d, adam, st); }});
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_kernels_cuda: CUDA ops (events, L2 flushed) against measured device ceilings"};
  std::string json_path;
  int repeats = 20;
  app.add_option("--repeats", repeats, "timed calls per op (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "also write the rows as JSON");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_kernels_cuda")) return *code;
  try {
    cudaStream_t st;
    CUDA_CHECK(cudaStreamCreate(&st));
    Blas blas, tf32(BlasOptions{Precision::Tf32});
#if defined(GRPO_SIMT)
    std::printf(
        "bench_kernels_cuda: SIMT build: the device is the CPU emulator, timings are meaningless;\n"
        "running each op once at a tiny shape as a smoke test.\n");
    (void)repeats;
    Case c(Shape{"smoke", 37, 40, 1, true}, blas, tf32, st);
    for (const Op& op : c.ops) {
      op.f();
      CUDA_CHECK(cudaStreamSynchronize(st));
      std::printf("ran %s 37x40\n", op.name);
    }
    CUDA_CHECK(cudaStreamDestroy(st));
    return 0;
#else
    int dev = 0;
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    const double gbs = bench::device_copy_gbps(size_t(1) << 30, 10), gf = bench::cublas_sgemm_gflops(8192, 5);
    std::printf(
        "device %s: copy %.0f GB/s, cuBLAS sgemm 8192^3 %.0f GFLOP/s (fp32, no TF32; the TF32 and bf16 "
        "rows are against it too)\n\n",
        prop.name, gbs, gf);
    std::printf("%-34s %-12s %10s %10s %10s %9s %7s\n", "op", "shape", "us/call", "MFLOP", "MB", "rate", "%ceil");
    bench::L2Flush flush;
    nlohmann::json rows = nlohmann::json::array();
    for (const Shape s : {Shape{"small rollout", 136, 512, 136}, Shape{"small loss", 27200, 512, 136},
                          Shape{"reference rollout", 544, 2048, 544}, Shape{"reference loss", 54400, 2048, 544}}) {
      Case c(s, blas, tf32, st);
      for (const Op& op : c.ops) {
        // Each timed call follows an L2 flush on the same stream; the flush sits outside the events.
        const double sec = bench::event_median_ms(st, repeats, op.f, [&] { flush(st); }) * 1e-3;
        const bool compute = op.flops > 0;
        const double rate = compute ? op.flops / sec * 1e-9 : op.bytes / sec * 1e-9;
        const double frac = rate / (compute ? gf : gbs);
        char shape[32];
        std::snprintf(shape, sizeof shape, "%dx%d", s.M, s.H);
        std::printf("%-34s %-12s %10.1f %10.2f %10.2f %6.0f %s %6.1f%%   (%s)\n", op.name, shape, sec * 1e6,
                    op.flops * 1e-6, op.bytes * 1e-6, rate, compute ? "GF/s" : "GB/s", 100 * frac, s.name);
        rows.push_back({{"op", op.name},
                        {"case", s.name},
                        {"M", s.M},
                        {"H", s.H},
                        {"us", sec * 1e6},
                        {"flops", op.flops},
                        {"bytes", op.bytes},
                        {"rate", rate},
                        {"unit", compute ? "GFLOP/s" : "GB/s"},
                        {"fraction", frac}});
      }
    }
    CUDA_CHECK(cudaStreamDestroy(st));
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      if (!f) return std::fprintf(stderr, "bench_kernels_cuda: error: cannot write %s\n", json_path.c_str()), 1;
      f << nlohmann::json{{"bench", "bench_kernels_cuda"},
                          {"device", prop.name},
                          {"copy_gbps", gbs},
                          {"sgemm_gflops", gf},
                          {"rows", rows}}
               .dump(2)
        << "\n";
    }
    return 0;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels_cuda: fatal: %s\n", e.what());
    return 1;
  }
}
