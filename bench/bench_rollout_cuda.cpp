// The rollout alone (its start, the games' reset and step 0's trunk, then the T steps, as
// CudaOps::rollout runs it in an epoch), per game step: the small preset's 200 steps of 136
// games at hidden 512 (or the reference's 100 of 544 at 2048) the ways the CUDA executor can run them: eager (a product
// and the fused step launched per step), a graph with the steps unrolled, the graph's WHILE loop (where the product
// takes the few-row kernel; the reference's is cuBLASLt's), and the cluster kernel (--cluster-rollout), in fp32 and
// bf16, and in bf16 with its product on tensor cores (--cluster-rollout-mma), and the steps unrolled with the games on
// 2 or 4 streams (--rollout-streams), and the cluster kernel at 7 games a start group (119
// games, 15 clusters, against the small preset's 136 and 17). CUDA events around whole
// rollouts, median of repeats after a warm-up; microseconds per step against the latency floor of
// bench/README.md (issue 16 item 1). After each cluster mode and each graph of the steps unrolled
// on one stream, one more rollout with phase clocks on (core/phase_clock.h) says where its step
// goes: the SM cycles of each phase of a step in the first cluster's blocks (or the fused step's
// first games' blocks), medians over the steps; for a cluster mode also where its blocks ran (how
// many SMs ran two blocks at once) and each cluster's microseconds a step, alone on its SMs or
// sharing one. --json writes the rows. On the
// SIMT build the "device" is the CPU emulator: each mode runs once at a tiny shape as a smoke
// test, timings are not taken (the phases' figures are the emulator's nanoseconds).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/device_ceiling.h"
#include "bench/parse_flags.h"
#include "core/cuda_check.h"
#include "core/cuda_resources.h"
#include "core/phase_clock.h"
#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_step.h"
#include "engine/executor.h"
#include "engine/step.h"
#include "kernels/matmul.h"

namespace {

using namespace grpo;

struct Mode {
  const char* name;
  bool graph, loop, cluster;
  Precision precision;
  bool mma = false;  // the cluster kernel's product on tensor cores
  int streams = 1;   // the games' ranges, each on a stream (--rollout-streams)
  int replicas = 0;  // the games per start group, where not the preset's (batch_size)
  ClusterWait wait = ClusterWait::Suspend;
};

constexpr Mode kModes[] = {
    {"eager", false, false, false, Precision::Fp32},
    {"graph, steps unrolled", true, false, false, Precision::Fp32},
    {"graph, WHILE loop", true, true, false, Precision::Fp32},
    {"graph, cluster kernel", true, true, true, Precision::Fp32},
    {"graph, steps unrolled, 2 streams", true, false, false, Precision::Fp32, false, 2},
    {"graph, steps unrolled, bf16", true, false, false, Precision::Bf16},
    {"graph, steps unrolled, bf16, 2 streams", true, false, false, Precision::Bf16, false, 2},
    {"graph, steps unrolled, bf16, 4 streams", true, false, false, Precision::Bf16, false, 4},
    {"graph, WHILE loop, bf16", true, true, false, Precision::Bf16},
    {"graph, cluster kernel, bf16", true, true, true, Precision::Bf16},
    {"graph, cluster kernel, bf16 mma", true, true, true, Precision::Bf16, true},
    // The small preset's 136 games need 17 clusters of 8 blocks, more than 132 SMs hold one block
    // each: some SMs run two blocks. 119 games (15 clusters) fit: the difference says what sharing costs.
    {"graph, cluster kernel, bf16 mma, 7 replicas", true, true, true, Precision::Bf16, true, 1, 7},
    // The mailboxes' waits by mbarrier.test_wait in a loop instead of try_wait: whether a
    // suspended thread wakes late after its phase completes, twice a step.
    {"graph, cluster kernel, bf16 mma, spin waits", true, true, true, Precision::Bf16, true, 1, 0, ClusterWait::Spin},
};

// One mode on its own buffers: the run's initial parameters, a zeroed arena (epoch 0).
struct Bench {
  TrainConfig c;
  cuda::DeviceArray<float> slabs;
  cuda::DeviceArray<std::byte> arena;
  Blas blas;
  cuda::Stream stream;
  CudaOps ops;
  StepBuffers b;
  Ops::Rollout r;
  cuda::Graph graph;
  cuda::GraphExec exec;

  // clocks: the cluster kernel's (cluster modes) or the fused step's (the others).
  Bench(const TrainConfig& cfg, const Mode& m, const PhaseClocks& clocks = {})
      : c(cfg),
        slabs(cuda::device_array<float>(4 * ParamLayout(cfg.hidden_size, cfg.obs_dim()).total)),
        arena(cuda::device_array<std::byte>(ArenaLayout(cfg).total)),
        blas(BlasOptions{cfg.precision}),
        stream(cuda::make_stream(cudaStreamNonBlocking)),
        ops(cfg.game, cfg.batch_size, blas, stream.get()) {
    const RunState s = initial_state(c);
    CUDA_CHECK(cudaMemcpy(slabs.get(), s.slabs.data(), s.slabs.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(arena.get(), 0, ArenaLayout(c).total));
    CUDA_CHECK(cudaDeviceSynchronize());
    ops.set_rollout_loop(m.loop);
    ops.set_rollout_cluster(m.cluster, m.mma);
    ops.set_rollout_cluster_wait(m.wait);
    ops.set_rollout_streams(m.streams);
    if (m.cluster)
      ops.set_rollout_clocks(clocks);
    else
      ops.set_step_clocks(clocks);
    b = StepBuffers::over(slabs.get(), arena.get(), c);
    refresh_weight_copies(ops, b.p, c.hidden_size, c.obs_dim());
    r = Ops::Rollout{b.p,           b.acts,
                     b.obs,         b.actions,
                     b.rewards,     b.games,
                     c.seed,        &b.scalars->epoch,
                     c.dropout,     c.max_steps,
                     c.games(),     c.obs_dim(),
                     c.hidden_size, ops.loss_pass_reads_h0(c.hidden_size, c.obs_dim())};  // as training runs it
    ops.rollout(r);  // eager first: every cuBLAS shape is met outside a capture
    if (m.graph) {
      cudaGraph_t g = nullptr;
      CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
      ops.rollout(r);
      CUDA_CHECK(cudaStreamEndCapture(stream.get(), &g));
      graph.reset(g);
      cudaGraphExec_t e = nullptr;
      CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
      exec.reset(e);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  void run() {
    if (exec)
      CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.get()));
    else
      ops.rollout(r);
  }
};

// Where the cluster kernel's blocks ran (PhaseClocks' spans): on how many SMs, how many of those
// ran two blocks at once, and each cluster's microseconds a step (its span over the steps), for
// the clusters alone on their SMs and for those that shared one. Prints two lines; returns them.
nlohmann::json placement(const std::vector<long long>& spans, int steps) {
  const ClusterSpans cs = cluster_spans(spans, kClusterBlocks);
  const auto group = [&](bool shared) {
    std::vector<double> us;
    for (size_t i = 0; i < cs.ns.size(); ++i)
      if (cs.shares[i] == shared) us.push_back(cs.ns[i] / 1e3 / steps);
    const double lo = us.empty() ? 0 : *std::min_element(us.begin(), us.end());
    const double hi = us.empty() ? 0 : *std::max_element(us.begin(), us.end());
    return nlohmann::json{{"clusters", us.size()}, {"us_median", median(us)}, {"us_min", lo}, {"us_max", hi}};
  };
  const nlohmann::json alone = group(false), shared = group(true);
  std::printf("  where the blocks ran: %zu blocks of %zu clusters on %zu SMs, %zu of them running two blocks at once\n",
              cs.blocks, cs.ns.size(), cs.sms, cs.shared_sms);
  for (const auto& [name, g] : {std::pair{"alone on their SMs", alone}, std::pair{"sharing an SM", shared}})
    if (g["clusters"].get<size_t>() > 0)
      std::printf("  us a step, %zu clusters %s: median %.2f (%.2f-%.2f)\n", g["clusters"].get<size_t>(), name,
                  g["us_median"].get<double>(), g["us_min"].get<double>(), g["us_max"].get<double>());
  return {{"blocks", cs.blocks}, {"sms", cs.sms}, {"shared_sms", cs.shared_sms}, {"alone", alone}, {"sharing", shared}};
}

// Whether mode m's rollout has phase clocks: the cluster kernel's, or the fused step's where the
// graph runs the steps unrolled on one stream (each stream's launches would mark the same blocks).
bool has_phases(const Mode& m) { return m.cluster || (m.graph && !m.loop && m.streams == 1); }

// The phases of a step in a rollout of mode m (a Bench of its own, so the timed one runs without
// clocks): warp 0 of each of the first cluster's blocks, or of the fused step's blocks of the
// first kClusterBlocks games, whose marks are its step's path (its thread 0 samples and plays;
// the others wait at the same barriers). Prints a row a phase: block 0's median cycles, the
// median and the largest of the blocks' medians, the share of the step and the microseconds that
// share is of us_step (the timed rollout's; the fused step's phases end with its launch, which
// begins under the product, so there a share is of the launch, not of the step). Returns the rows.
nlohmann::json phases(const TrainConfig& c, const Mode& m, double us_step) {
  PhaseClocks pc;
  pc.blocks = kClusterBlocks, pc.steps = unsigned(c.max_steps);
  pc.marks = m.cluster ? kClusterMarks : kStepMarks, pc.warps = kClusterWarps;
  const PhaseEnd end = m.cluster ? PhaseEnd::NextStep : PhaseEnd::LastMark;
  const char* const* names = m.cluster ? kClusterPhases : kStepPhases;
  // The cluster kernel's spans: every block of its plan's at most ceil(N / 8) clusters.
  if (m.cluster) pc.span_blocks = unsigned((c.games() + kClusterBlocks - 1) / kClusterBlocks * kClusterBlocks);
  auto buffer = cuda::device_array<long long>(pc.size());
  auto span_buffer = cuda::device_array<long long>(std::max<size_t>(pc.spans_size(), 1));
  pc.at = buffer.get();
  if (m.cluster) pc.spans = span_buffer.get();
  const std::vector<long long> unmarked(std::max(pc.size(), pc.spans_size()), kUnmarked);
  Bench probe(c, m, pc);
  probe.run();  // warm
  // On the probe's stream: a copy from pageable memory on the legacy stream may land after the
  // next launch on a non-blocking stream.
  CUDA_CHECK(cudaMemcpyAsync(pc.at, unmarked.data(), pc.size() * sizeof(long long), cudaMemcpyHostToDevice,
                             probe.stream.get()));
  if (pc.spans)
    CUDA_CHECK(cudaMemcpyAsync(pc.spans, unmarked.data(), pc.spans_size() * sizeof(long long), cudaMemcpyHostToDevice,
                               probe.stream.get()));
  probe.run();
  CUDA_CHECK(cudaStreamSynchronize(probe.stream.get()));
  std::vector<long long> at(pc.size()), spans(pc.spans_size());
  CUDA_CHECK(cudaMemcpy(at.data(), pc.at, at.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  if (pc.spans)
    CUDA_CHECK(cudaMemcpy(spans.data(), pc.spans, spans.size() * sizeof(long long), cudaMemcpyDeviceToHost));

  std::vector<PhaseMedians> blocks;
  for (unsigned b = 0; b < pc.blocks; ++b) blocks.push_back(phase_medians(at, pc, b, 0, end));
  const size_t n = blocks[0].phase.size();  // the phases, each named in names
  std::vector<double> of_blocks(n), largest(n, 0.0), steps;
  double sum = 0;
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> v;
    for (const PhaseMedians& b : blocks) v.push_back(b.phase[k]), largest[k] = std::max(largest[k], b.phase[k]);
    of_blocks[k] = median(v);
    sum += of_blocks[k];
  }
  for (const PhaseMedians& b : blocks) steps.push_back(b.step);
  int dev = 0, khz = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
  const char* whose = m.cluster ? "the first cluster's" : "the first games'";
  std::printf("  phases of a step (%s): warp 0 of %s %u blocks, medians over %zu of %d steps\n", m.name, whose,
              pc.blocks, blocks[0].steps, c.max_steps);
  std::printf("  %-18s %14s %14s %14s %8s %10s\n", "phase", "cycles blk 0", "median blks", "max blks", "share", "us");
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < n; ++k) {
    const double share = sum > 0 ? of_blocks[k] / sum : 0;
    std::printf("  %-18s %14.0f %14.0f %14.0f %7.1f%% %10.3f\n", names[k], blocks[0].phase[k], of_blocks[k], largest[k],
                100 * share, share * us_step);
    rows.push_back({{"phase", names[k]},
                    {"cycles_block0", blocks[0].phase[k]},
                    {"cycles_median", of_blocks[k]},
                    {"cycles_max", largest[k]},
                    {"share", share},
                    {"us", share * us_step}});
  }
  const double step_cycles = median(steps);
  std::printf("  %-18s %14.0f %14.0f %14s %8s %10.3f  (%.3f us at the SM's %d MHz)\n", "step", blocks[0].step,
              step_cycles, "", "", us_step, step_cycles / (khz / 1e3), khz / 1000);
  nlohmann::json out{{"whose", whose},
                     {"blocks", pc.blocks},
                     {"steps", blocks[0].steps},
                     {"step_cycles", step_cycles},
                     {"sm_clock_mhz", khz / 1e3},
                     {"rows", rows}};
  if (m.cluster) out["placement"] = placement(spans, c.max_steps);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_rollout_cuda: the rollout alone, microseconds per game step, per way of running it"};
  std::string preset = "small", json_path;
  int repeats = 20;
  app.add_option("--preset", preset, "small (200 steps of 136 games, hidden 512) or reference (100 of 544, 2048)")
      ->check(CLI::IsMember({"small", "reference"}));
  app.add_option("--repeats", repeats, "timed rollouts per mode (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "also write the rows as JSON");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_rollout_cuda")) return *code;
  try {
    TrainConfig base;
    if (preset == "small") base.apply_small_preset();
#if defined(GRPO_SIMT)
    std::printf(
        "bench_rollout_cuda: SIMT build: the device is the CPU emulator, timings are meaningless;\n"
        "running each mode once at hidden 32, 4 steps as a smoke test.\n");
    (void)repeats;
    base.hidden_size = 32, base.batch_size = 1, base.max_steps = 4;
#endif
    base.validate();
    nlohmann::json rows = nlohmann::json::array();
    std::printf("%-40s %12s %12s   (%d steps of %d games, hidden %d)\n", "mode", "us/step", "ms/rollout",
                base.max_steps, base.games(), base.hidden_size);
    for (const Mode& m : kModes) {
      TrainConfig c = base;
      c.precision = m.precision;
      if (m.replicas > 0) {
        c.batch_size = m.replicas;
        c.validate();
      }
      if (m.loop && !m.cluster && !linear_forward_takes_few_rows(c.games(), c.hidden_size, c.hidden_size, false)) {
        std::printf("%-40s %12s   (%d games: cuBLASLt's product, whose steps stay unrolled)\n", m.name, "n/a",
                    c.games());
        continue;
      }
      if (m.cluster && !rollout_cluster_fits(c.games(), c.hidden_size, c.obs_dim(), c.precision == Precision::Bf16,
                                             m.mma ? ClusterProduct::TensorCores : ClusterProduct::Fma)) {
        std::printf("%-40s %12s   (%d games at hidden %d are not the cluster kernel's)\n", m.name, "n/a", c.games(),
                    c.hidden_size);
        continue;
      }
      double us_step = 0;
      {
        Bench bench(c, m);
#if defined(GRPO_SIMT)
        bench.run();
        CUDA_CHECK(cudaStreamSynchronize(bench.stream.get()));
        std::printf("%-40s %12s   ran once\n", m.name, "-");
#else
        const double ms = bench::event_median_ms(bench.stream.get(), repeats, [&] { bench.run(); });
        us_step = ms * 1e3 / c.max_steps;
        std::printf("%-40s %12.2f %12.3f\n", m.name, us_step, ms);
        rows.push_back({{"mode", m.name}, {"games", c.games()}, {"us_per_step", us_step}, {"ms_per_rollout", ms}});
#endif
      }
      if (has_phases(m)) {
        nlohmann::json table = phases(c, m, us_step);
        if (!rows.empty() && rows.back()["mode"] == m.name) rows.back()["phases"] = std::move(table);
      }
    }
    if (!json_path.empty()) {
      int dev = 0;
      cudaDeviceProp prop{};
      CUDA_CHECK(cudaGetDevice(&dev));
      CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
      std::ofstream f(json_path);
      if (!f) return std::fprintf(stderr, "bench_rollout_cuda: error: cannot write %s\n", json_path.c_str()), 1;
      f << nlohmann::json{{"bench", "bench_rollout_cuda"},
                          {"device", prop.name},
                          {"preset", preset},
                          {"steps", base.max_steps},
                          {"games", base.games()},
                          {"hidden", base.hidden_size},
                          {"rows", rows}}
               .dump(2)
        << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_rollout_cuda: fatal: %s\n", e.what());
    return 1;
  }
}
