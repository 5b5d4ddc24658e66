// What cuBLASLt's heuristic leaves on the table: each product the CUDA executor sends to cuBLASLt
// at the presets' shapes (the reference rollout's 544-row forward, the loss pass's three products
// at 27,200 and 54,400 rows), in fp32, TF32 and bf16, run with each of the heuristic's first
// --ranks answers (BlasOptions::heuristic_rank; the engine takes rank 0). CUDA events around each
// call with L2 flushed before it, median of repeats, as bench_kernels_cuda times them. The rows
// say whether choosing among the answers (once per shape and run, so that the bits stay
// reproducible) would buy anything before the engine does it. --json writes the rows. On the SIMT
// build the "device" is the CPU emulator: each product runs once per rank at a small shape as a
// smoke test, timings are not taken. Each row names the algorithm each rank ran (cuBLASLt's id,
// tile, K splits, stages): each rank is its own query of the heuristic, and two queries need not
// agree, so two ranks may name one algorithm. Then rank 0's answer with K in each of --splits
// splits (BlasOptions::split_k), where cuBLASLt takes it: what splitting K would buy the products
// with few rows, whose output fills few tiles (the reference rollout's 544 rows), which the
// heuristic's answers do not split.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/device_ceiling.h"
#include "bench/host_ceiling.h"
#include "bench/parse_flags.h"
#include "core/cuda_check.h"
#include "core/cuda_resources.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace {

using namespace grpo;

struct Case {
  const char* name;
  int M, H;           // rows, hidden width (each product is H x H)
  bool forward_only;  // the rollout runs only the forward product
};

// A case's operands, fp32 and their bf16 copies: X and dY [M, H] in [-1, 1), W [H, H].
struct Operands {
  int M, H;
  cuda::DeviceArray<float> x, w, dy, out, dw;
  cuda::DeviceArray<Bf16> x16, w16, dy16;
  Operands(int m, int h, cudaStream_t st)
      : M(m),
        H(h),
        x(upload(size_t(m) * h, 1)),
        w(upload(size_t(h) * h, 2)),
        dy(upload(size_t(m) * h, 3)),
        out(cuda::device_array<float>(size_t(m) * h)),
        dw(cuda::device_array<float>(size_t(h) * h)),
        x16(cuda::device_array<Bf16>(size_t(m) * h)),
        w16(cuda::device_array<Bf16>(size_t(h) * h)),
        dy16(cuda::device_array<Bf16>(size_t(m) * h)) {
    // A synchronous copy from pageable memory may land after it returns, on the legacy stream,
    // which st (non-blocking) does not wait for: wait for the uploads before st reads them.
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
    to_bf16_cuda(x.get(), x16.get(), size_t(m) * h, st);
    to_bf16_cuda(w.get(), w16.get(), size_t(h) * h, st);
    to_bf16_cuda(dy.get(), dy16.get(), size_t(m) * h, st);
    CUDA_CHECK(cudaStreamSynchronize(st));
  }
  static cuda::DeviceArray<float> upload(size_t n, unsigned seed) {
    auto d = cuda::device_array<float>(n);
    const auto h = bench::filled(n, seed);
    CUDA_CHECK(cudaMemcpy(d.get(), h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  }
  // The product `op` (forward, backward_input, backward_weight) through matmul.h's launchers.
  void run(Blas& blas, const std::string& op, bool bf16, cudaStream_t st) {
    if (op == "forward") {
      if (bf16)
        linear_forward_bf16_cuda(blas, x16.get(), w16.get(), nullptr, out.get(), M, H, H, st);
      else
        linear_forward_cuda(blas, x.get(), w.get(), nullptr, out.get(), M, H, H, st);
    } else if (op == "backward_input") {
      if (bf16)
        linear_backward_input_bf16_cuda(blas, dy16.get(), w16.get(), out.get(), M, H, H, st);
      else
        linear_backward_input_cuda(blas, dy.get(), w.get(), out.get(), M, H, H, st);
    } else {
      if (bf16)
        linear_backward_weight_bf16_cuda(blas, dy16.get(), x16.get(), dw.get(), M, H, H, false, st);
      else
        linear_backward_weight_cuda(blas, dy.get(), x.get(), dw.get(), M, H, H, false, st);
    }
  }
};

void print_header() {
  std::printf("%-5s %-16s %-18s %12s %9s %9s %5s %7s %8s  %s\n", "prec", "op", "case", "rows x H", "first us",
              "best us", "rank", "gain", "TFLOP/s", "[us per rank]");
}

// One answer's run: microseconds a call (0 on the emulator), or no time when cuBLASLt refused it,
// and the configuration it ran with.
struct Answer {
  std::optional<double> us;
  Blas::AlgoConfig algo{-1, 0, 1, 0};
};

nlohmann::json to_json(const std::vector<Answer>& answers) {
  nlohmann::json a = nlohmann::json::array();
  for (const Answer& x : answers)
    a.push_back({{"us", x.us ? nlohmann::json(*x.us) : nlohmann::json(nullptr)},
                 {"algo_id", x.algo.id},
                 {"tile_id", x.algo.tile},
                 {"split_k", x.algo.split_k},
                 {"stages_id", x.algo.stages}});
  return a;
}

// One answer's microseconds a call: its first call makes its plan outside the timer, where an
// answer the heuristic does not reach, or that does not take a split, throws std::out_of_range
// (to the caller), and where cuBLASLt may refuse it (a CudaError: no time, unless `fatal`). A
// refused answer leaves the device usable (its error, if the runtime kept one, is cleared); an
// error that sticks (the context lost) ends the survey. `which` names the answer in the message.
std::optional<double> timed(const std::function<void()>& call,
                            const std::function<double(const std::function<void()>&)>& time, cudaStream_t st,
                            bool fatal, const std::string& which) {
  try {
    call();
    CUDA_CHECK(cudaStreamSynchronize(st));
    return 1e3 * time(call);
  } catch (const CudaError& e) {
    if (fatal) throw;
    (void)cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess) throw;
    std::printf("  %s refused: %s\n", which.c_str(), e.what());
    return std::nullopt;
  }
}

// Per (case, precision, op): each rank the heuristic offers, up to `ranks` (the survey of a
// product ends at the first it does not reach; a refusal at rank 0 is the engine's failure too,
// and fatal), then rank 0's answer with K in each of `splits` splits. time(f) times calls of f
// (or, on the emulator, runs it once and returns 0).
nlohmann::json survey(const std::vector<Case>& cases, int ranks, const std::vector<int>& splits, cudaStream_t st,
                      const std::function<double(const std::function<void()>&)>& time) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Case& c : cases) {
    Operands o(c.M, c.H, st);
    for (const Precision prec : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
      std::vector<std::unique_ptr<Blas>> blas;  // one context per rank: each fixes its own algorithms
      for (int r = 0; r < ranks; ++r) blas.push_back(std::make_unique<Blas>(BlasOptions{prec, size_t(32) << 20, r}));
      std::vector<std::unique_ptr<Blas>> split_blas;  // rank 0's answer, K in splits[i] splits
      for (int k : splits) {
        BlasOptions opts{prec, size_t(32) << 20, 0};
        opts.split_k = k;
        split_blas.push_back(std::make_unique<Blas>(opts));
      }
      for (const std::string op : {"forward", "backward_input", "backward_weight"}) {
        if (c.forward_only && op != "forward") continue;
        std::vector<Answer> answers;
        for (int r = 0; r < ranks; ++r) {
          Blas& b = *blas[size_t(r)];
          const auto call = [&] { o.run(b, op, prec == Precision::Bf16, st); };
          Answer a;
          try {
            a.us = timed(call, time, st, r == 0,
                         "rank " + std::to_string(r) + " of " + precision_name(prec) + " " + op + " " + c.name);
          } catch (const std::out_of_range&) {
            break;  // the heuristic offers no more answers for this product
          }
          if (a.us) a.algo = b.last_algorithm();
          answers.push_back(a);
        }
        if (answers.empty()) continue;  // rank 0 always answers (Blas throws CudaError otherwise)
        size_t best = 0;
        for (size_t r = 1; r < answers.size(); ++r)
          if (answers[r].us && *answers[r].us < *answers[best].us) best = r;
        const double first = *answers[0].us, fastest = *answers[best].us, flops = 2.0 * c.M * c.H * c.H;
        std::printf("%-5s %-16s %-18s %6dx%-5d %9.1f %9.1f %5zu %6.2fx %8.1f  [", precision_name(prec), op.c_str(),
                    c.name, c.M, c.H, first, fastest, best, fastest > 0 ? first / fastest : 1.0,
                    fastest > 0 ? flops / fastest * 1e-6 : 0.0);
        for (const Answer& a : answers) a.us ? std::printf(" %.1f", *a.us) : std::printf(" -");
        std::printf(" ]  algo %d tile %d split-k %d\n", answers[best].algo.id, answers[best].algo.tile,
                    answers[best].algo.split_k);
        nlohmann::json split_rows = nlohmann::json::array();
        if (!splits.empty()) std::printf("  rank 0 with K split:");
        for (size_t i = 0; i < splits.size(); ++i) {
          Blas& b = *split_blas[i];
          std::optional<double> us;
          try {
            us = timed([&] { o.run(b, op, prec == Precision::Bf16, st); }, time, st, false,
                       std::to_string(splits[i]) + " splits of " + op + " " + c.name);
          } catch (const std::out_of_range&) {  // the answer does not take that many splits
          }
          us ? std::printf(" %d: %.1f", splits[i], *us) : std::printf(" %d: -", splits[i]);
          split_rows.push_back({{"split", splits[i]}, {"us", us ? nlohmann::json(*us) : nlohmann::json(nullptr)}});
        }
        if (!splits.empty()) std::printf("\n");
        rows.push_back({{"precision", precision_name(prec)},
                        {"case", c.name},
                        {"op", op},
                        {"M", c.M},
                        {"H", c.H},
                        {"answers", to_json(answers)},
                        {"first_us", first},
                        {"best_us", fastest},
                        {"best_rank", best},
                        {"tflops_best", fastest > 0 ? flops / fastest * 1e-6 : 0.0},
                        {"splits", split_rows}});
      }
    }
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_gemm_algos_cuda: each cuBLASLt heuristic answer for the executor's products, timed"};
  std::string json_path;
  int ranks = 8, repeats = 10;
  std::vector<int> splits = {2, 3, 4, 6, 8};
  app.add_option("--ranks", ranks, "heuristic answers tried per product (rank 0 is the engine's)")
      ->check(CLI::Range(1, 32));
  app.add_option("--repeats", repeats, "timed calls per answer (median)")->check(CLI::Range(1, 1000));
  app.add_option("--splits", splits, "K splits tried with rank 0's answer (comma-separated; none: --splits 0)")
      ->delimiter(',')
      ->check(CLI::Range(0, 65536));
  app.add_option("--json", json_path, "also write the rows as JSON");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_gemm_algos_cuda")) return *code;
  try {
    splits.erase(std::remove(splits.begin(), splits.end(), 0), splits.end());
    cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
    cudaStream_t st = stream.get();
#if defined(GRPO_SIMT)
    std::printf("SIMT build: the device is the CPU emulator, timings are meaningless; each product runs once.\n");
    (void)repeats;
    print_header();
    const nlohmann::json rows =
        survey({{"smoke", 300, 40, false}}, ranks, splits, st, [&](const std::function<void()>& f) {
          f();
          CUDA_CHECK(cudaStreamSynchronize(st));
          return 0.0;
        });
    std::string device = "SIMT emulator";
#else
    int dev = 0;
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    bench::L2Flush flush;
    std::printf("device %s: us per call, events, L2 flushed, median of %d\n", prop.name, repeats);
    print_header();
    const std::vector<Case> cases = {{"small loss", 27200, 512, false},
                                     {"reference rollout", 544, 2048, true},
                                     {"reference loss", 54400, 2048, false}};
    const nlohmann::json rows = survey(cases, ranks, splits, st, [&](const std::function<void()>& f) {
      return bench::event_median_ms(st, repeats, f, [&] { flush(st); });
    });
    std::string device = prop.name;
#endif
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      if (!f) return std::fprintf(stderr, "bench_gemm_algos_cuda: error: cannot write %s\n", json_path.c_str()), 1;
      f << nlohmann::json{{"bench", "bench_gemm_algos_cuda"}, {"device", device}, {"ranks", ranks}, {"rows", rows}}
               .dump(2)
        << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm_algos_cuda: fatal: %s\n", e.what());
    return 1;
  }
}
