// Epoch benchmark: epochs/s and game steps/s of the host executor, and of the CUDA executor
// eager and graph-replayed when a real GPU answers; warm-up epochs excluded, median of repeats.
// Prints the ceilings it compares against (OpenBLAS sgemm here; copy bandwidth and a large cuBLAS
// GEMM on a GPU) and the ratio to the FLOP floor: the spec's FLOP count (8MP, engine/cost.h's
// definition) at that rate, although the engine executes only ~6MP of it. --breakdown adds a
// steady-clock per-op table of the host executor (where the CPU time goes; the host's loss pass
// is one row, its blocks call the twins directly) and, on a GPU, an event-timed per-op table of
// the eager CUDA epoch (bench/cuda_breakdown.h). --precision tf32|bf16 runs the CUDA executor's
// products as grpo train --precision does. --json writes the same rows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "bench/parse_flags.h"
#include "bench/device_ceiling.h"
#if defined(GRPO_GPU)
#include "bench/cuda_breakdown.h"
#endif
#include "bench/host_ceiling.h"
#include "bench/timed_ops.h"
#include "engine/cost.h"
#include "core/errors.h"
#include "engine/executor.h"
#include "engine/host/ops.h"
#include "engine/step.h"

namespace {

using namespace grpo;
using nlohmann::json;

struct Row {
  std::string executor;
  double epoch_s;            // median seconds per epoch, each epoch waited for
  double epoch_s_pipelined;  // median seconds between epochs with the next one queued
};

void aligned_free(void* p) { std::free(p); }

struct Times {
  double waited, pipelined;
};

// Median seconds per epoch of `repeats` epochs after `warmup` (the graph's capture happens in
// the warm-up), measured two ways. Waited: each epoch is launched and waited for, so nothing is
// hidden, and the launch and the wait's round trip are counted in every epoch. Pipelined: as
// grpo train runs (engine/trainer.cpp), epoch e + 1 is launched before epoch e's metrics are
// waited for, and the figure is the median time between consecutive waits' returns: the
// device's time per epoch with the gaps between graphs, without the host's round trip.
Times time_executor(Executor& ex, const TrainConfig& c, int warmup, int repeats) {
  ex.set_state(initial_state(c));
  uint32_t e = 0;
  auto one = [&] {
    ex.launch_epoch();
    ex.wait_metrics(e++);
  };
  const double waited = bench::time_median(one, repeats, warmup);
  ex.launch_epoch();
  ex.wait_metrics(e++);  // one untimed epoch: the intervals below start from a return
  ex.launch_epoch();
  std::vector<double> gaps;
  double t = bench::seconds_now();
  for (int i = 0; i < repeats; ++i) {
    ex.launch_epoch();
    ex.wait_metrics(e++);
    const double now = bench::seconds_now();
    gaps.push_back(now - t);
    t = now;
  }
  ex.wait_metrics(e++);
  return {waited, bench::median(gaps)};
}

// Per-op breakdown of one host epoch (after `warmup` untimed ones), on the executor's own ops.
std::map<std::string, bench::OpTime> host_breakdown(const TrainConfig& c, int warmup, int repeats) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  std::unique_ptr<void, void (*)(void*)> slabs(std::aligned_alloc(64, (4 * pl.total * 4 + 63) / 64 * 64), aligned_free);
  std::unique_ptr<void, void (*)(void*)> arena(std::aligned_alloc(64, (al.total + 63) / 64 * 64), aligned_free);
  const RunState s = initial_state(c);
  std::memcpy(slabs.get(), s.slabs.data(), s.slabs.size() * sizeof(float));
  std::memset(arena.get(), 0, al.total);
  const StepBuffers b = StepBuffers::over(static_cast<float*>(slabs.get()), arena.get(), c);
  *b.scalars = s.scalars;
  HostOps host(c.game, c.batch_size);
  refresh_weight_copies(host, b.p, c.hidden_size, c.obs_dim());  // as an executor's set_state does
  for (int i = 0; i < warmup; ++i) training_step(host, b, c);
  bench::SteadyClock clock;
  bench::TimedOps timed(host, clock, /*whole_composites=*/true);
  for (int i = 0; i < repeats; ++i) training_step(timed, b, c);
  for (auto& [name, t] : timed.times) t.seconds /= repeats, t.calls /= repeats;
  return timed.times;
}

// Prints one breakdown table and returns it as JSON rows.
json print_breakdown(const char* title, const std::map<std::string, bench::OpTime>& t) {
  double total = 0;
  for (const auto& [n, v] : t) total += v.seconds;
  std::printf("\n%s:\n", title);
  std::printf("%-40s %10s %8s %7s\n", "phase/op", "s", "calls", "share");
  json rows = json::array();
  for (const auto& [n, v] : t) {
    std::printf("%-40s %10.6f %8ld %6.1f%%\n", n.c_str(), v.seconds, v.calls, 100 * v.seconds / total);
    rows.push_back({{"op", n}, {"s", v.seconds}, {"calls", v.calls}});
  }
  std::printf("%-40s %10.6f\n", "total", total);
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_epoch: epochs/s of the host and CUDA executors against measured ceilings"};
  std::string preset = "small", json_path, only, algo = "reference";
  int hidden = 0, batch = 0, steps = 0, warmup = 1, repeats = 5, gemm_n = 1024;
  bool breakdown = false, tf32 = false;
  std::string precision = "fp32";
  app.add_option("--preset", preset, "small or reference (the sizes of grpo train's presets)")
      ->check(CLI::IsMember({"small", "reference"}));
  app.add_option("--hidden-size", hidden, "override the preset's hidden width")->check(CLI::Range(8, 8192));
  app.add_option("--batch-size", batch, "override the preset's replicas per group")->check(CLI::Range(1, 65536));
  app.add_option("--max-steps", steps, "override the preset's steps per epoch")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed epochs first (graph capture happens here)")->check(CLI::Range(0, 100));
  app.add_option("--repeats", repeats, "timed epochs (median reported)")->check(CLI::Range(1, 1000));
  app.add_option("--executor", only, "host, eager or graph (default: every one available)")
      ->check(CLI::IsMember({"host", "eager", "graph"}));
  app.add_option("--gemm-n", gemm_n, "size of the square sgemm that measures the host ceiling")
      ->check(CLI::Range(64, 8192));
  app.add_option("--algo", algo, "reference, or grpo with its defaults (grpo train --algo grpo)")
      ->check(CLI::IsMember({"reference", "grpo"}));
  app.add_flag("--breakdown", breakdown, "per-op tables of one epoch: host (steady clock), CUDA eager (events)");
  auto* precision_opt =
      app.add_option("--precision", precision, "the CUDA executor's products (grpo train --precision)")
          ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  app.add_flag("--tf32", tf32, "the same as --precision tf32")->excludes(precision_opt);
  std::string rollout_loop = "off";
  app.add_option("--rollout-loop", rollout_loop,
                 "on: the graph's rollout as one WHILE node where it can (grpo train --rollout-loop); off: two "
                 "nodes a step (the default)")
      ->check(CLI::IsMember({"on", "off"}));
  std::string rollout_cluster = "off";
  app.add_option("--cluster-rollout", rollout_cluster,
                 "on: the whole rollout as one kernel of thread-block clusters where it fits (grpo train "
                 "--cluster-rollout); mma: with its product on bf16 tensor cores (--cluster-rollout-mma, needs "
                 "--precision bf16); off: the default")
      ->check(CLI::IsMember({"on", "mma", "off"}));
  int rollout_streams = 1;
  app.add_option("--rollout-streams", rollout_streams,
                 "the rollout's games in this many ranges, each on a stream of its own (grpo train "
                 "--rollout-streams)")
      ->check(CLI::Range(1, TrainConfig::kMaxRolloutStreams));
  std::string gemm_tuning;
  app.add_option("--gemm-tuning", gemm_tuning,
                 "the CUDA executors take cuBLASLt's answers from this file (grpo tune-gemm; grpo train "
                 "--gemm-tuning)");
  app.add_option("--json", json_path, "also write the results as JSON to this file");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_epoch")) return *code;

  TrainConfig c;
  if (preset == "small") c.apply_small_preset();
  if (hidden) c.hidden_size = hidden;
  if (batch) c.batch_size = batch;
  if (steps) c.max_steps = steps;
  if (algo == "grpo") {
    c.algo = Algo::Grpo;
    c.apply_grpo_defaults();
  }
  c.precision = tf32 ? Precision::Tf32 : *parse_precision(precision);
  c.rollout_loop = rollout_loop == "on";
  c.rollout_cluster = rollout_cluster != "off";
  c.rollout_cluster_mma = rollout_cluster == "mma";
  c.gemm_tuning = gemm_tuning;
  c.rollout_streams = rollout_streams;
  c.backend = Backend::Host;
  try {
    c.validate();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "bench_epoch: error: %s\n", e.what());
    return 2;
  }
  const EpochCost cost = epoch_cost(c);
  const double game_steps = double(c.samples());
  json out = {{"bench", "bench_epoch"},
              {"config",
               {{"hidden", c.hidden_size},
                {"batch", c.batch_size},
                {"steps", c.max_steps},
                {"games", c.games()},
                {"samples", c.samples()},
                {"algo", algo_name(c.algo)},
                {"updates_per_epoch", c.algo == Algo::Grpo ? c.ppo_epochs * c.minibatches : 1},
                {"precision", precision_name(c.precision)},
                {"rollout_loop", c.rollout_loop},
                {"rollout_cluster", c.rollout_cluster},
                {"rollout_cluster_mma", c.rollout_cluster_mma},
                {"rollout_streams", c.rollout_streams},
                {"gemm_tuning", c.gemm_tuning}}},
              {"flops_per_epoch", cost.flops},
              {"flops_executed_per_epoch", cost.flops_executed},
              {"min_bytes_per_epoch", cost.min_bytes},
              {"omp_threads", omp_get_max_threads()},
              {"rows", json::array()}};

  // The host's ceiling is measured before and after its epochs (the VM's clock drifts by 10-20 %
  // over minutes); the floor uses the higher of the two, the stricter comparison.
  const double gflops_before = bench::sgemm_gflops(gemm_n, 5);
  std::printf(
      "config: hidden %d, batch %d, steps %d, games %d, samples %lld; %.2f GFLOP (spec count; %.2f executed) "
      "and >= %.1f MB per epoch\n",
      c.hidden_size, c.batch_size, c.max_steps, c.games(), (long long)c.samples(), cost.flops * 1e-9,
      cost.flops_executed * 1e-9, cost.min_bytes * 1e-6);
  std::vector<Row> rows;
  if (only.empty() || only == "host") {
    auto ex = make_host_executor(c);
    const Times t = time_executor(*ex, c, warmup, repeats);
    rows.push_back({"host", t.waited, t.pipelined});
  }
  const double gflops_after = bench::sgemm_gflops(gemm_n, 5);
  const double host_gflops = std::max(gflops_before, gflops_after);
  const double host_floor = cost.flops / (host_gflops * 1e9);
  std::printf(
      "host ceiling: OpenBLAS sgemm %d^3 %.1f GFLOP/s before, %.1f after the host epochs (threads %d) -> "
      "FLOP floor %.3f s/epoch\n",
      gemm_n, gflops_before, gflops_after, omp_get_max_threads(), host_floor);
  out["host_sgemm_gflops"] = host_gflops;
  out["host_sgemm_gflops_before_after"] = {gflops_before, gflops_after};
  out["host_flop_floor_s"] = host_floor;

  double dev_floor = 0;
#if defined(GRPO_GPU)
  std::string why;
  if ((only.empty() || only != "host") && cuda_device_available(&why)) {
    const double bw = bench::device_copy_gbps(size_t(1) << 30, 10), gf = bench::cublas_sgemm_gflops(8192, 5);
    dev_floor = std::max(cost.flops / (gf * 1e9), cost.min_bytes / (bw * 1e9));
    std::printf(
        "device ceiling: copy %.0f GB/s, cuBLAS fp32 sgemm 8192^3 %.0f GFLOP/s -> floor %.4f s/epoch "
        "(the rollout's %d sequential steps are not in it)\n",
        bw, gf, dev_floor, c.max_steps);
    out["device_copy_gbps"] = bw;
    out["device_sgemm_gflops"] = gf;
    out["device_floor_s"] = dev_floor;
    for (bool graph : {false, true}) {
      if (!only.empty() && only != (graph ? "graph" : "eager")) continue;
      TrainConfig g = c;
      g.backend = Backend::Cuda;
      g.use_graph = graph;
      std::unique_ptr<Executor> ex;
      try {
        ex = make_cuda_executor(g);
      } catch (const UsageError& e) {  // a tuning file for another device, say
        std::fprintf(stderr, "bench_epoch: error: %s\n", one_line(e.what()).c_str());
        return 2;
      }
      const Times t = time_executor(*ex, g, std::max(warmup, 2), repeats);
      rows.push_back({graph ? "cuda graph" : "cuda eager", t.waited, t.pipelined});
    }
  } else if (only.empty() || only != "host") {
    std::printf("cuda: not measured (%s)\n", why.c_str());
  }
#elif defined(GRPO_SIMT)
  std::printf("cuda: not measured (simt build: its device is the CPU emulator, timings would be meaningless)\n");
#endif

  std::printf("\n%-12s %12s %10s %14s %12s %12s\n", "executor", "s/epoch", "epochs/s", "game steps/s", "x floor",
              "pipelined");
  for (const Row& r : rows) {
    const double floor = r.executor == "host" ? host_floor : dev_floor;
    std::printf("%-12s %12.4f %10.2f %14.3g %12.2f %12.2f\n", r.executor.c_str(), r.epoch_s, 1 / r.epoch_s,
                game_steps / r.epoch_s, floor > 0 ? r.epoch_s / floor : 0.0, 1 / r.epoch_s_pipelined);
    out["rows"].push_back({{"executor", r.executor},
                           {"epoch_s", r.epoch_s},
                           {"epochs_per_s", 1 / r.epoch_s},
                           {"game_steps_per_s", game_steps / r.epoch_s},
                           {"x_floor", floor > 0 ? r.epoch_s / floor : 0.0},
                           {"epoch_s_pipelined", r.epoch_s_pipelined},
                           {"epochs_per_s_pipelined", 1 / r.epoch_s_pipelined}});
  }

  if (breakdown) {
    const int n = std::max(1, std::min(repeats, 3));
    if (only.empty() || only == "host")
      out["breakdown"] = print_breakdown("host per-op breakdown (s per epoch, steady clock around each op)",
                                         host_breakdown(c, warmup, n));
#if defined(GRPO_GPU)
    if (dev_floor > 0) {
      TrainConfig g = c;
      g.backend = Backend::Cuda;
      out["cuda_breakdown"] =
          print_breakdown("cuda eager per-op breakdown (s per epoch, events around each op; launch waits included)",
                          bench::cuda_breakdown(g, std::max(warmup, 2), n));
    }
#endif
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) {
      std::fprintf(stderr, "bench_epoch: error: cannot write %s\n", json_path.c_str());
      return 1;
    }
    f << out.dump(2) << "\n";
  }
  return 0;
}
