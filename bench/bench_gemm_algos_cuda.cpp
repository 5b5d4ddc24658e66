// What cuBLASLt's heuristic leaves on the table: each product the CUDA executor sends to cuBLASLt
// at the presets' shapes (the reference rollout's 544-row forward, the loss pass's three products
// at 27,200 and 54,400 rows), in fp32, TF32 and bf16, run with each of the heuristic's first
// --ranks answers (BlasOptions::heuristic_rank; the engine takes rank 0). CUDA events around each
// call with L2 flushed before it, median of repeats, as bench_kernels_cuda times them. The rows
// say whether choosing among the answers (once per shape and run, so that the bits stay
// reproducible) would buy anything before the engine does it. --json writes the rows. On the SIMT
// build the "device" is the CPU emulator: each product runs once per rank at a small shape as a
// smoke test, timings are not taken.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
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

// Per (precision, case, op): the microseconds of each rank the heuristic offers, up to `ranks`;
// time(f) times one call of f (or, on the emulator, runs it once and returns 0).
nlohmann::json survey(const std::vector<Case>& cases, int ranks, cudaStream_t st,
                      const std::function<double(const std::function<void()>&)>& time) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Precision prec : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    std::vector<std::unique_ptr<Blas>> blas;  // one context per rank: each fixes its own algorithms
    for (int r = 0; r < ranks; ++r) blas.push_back(std::make_unique<Blas>(BlasOptions{prec, size_t(32) << 20, r}));
    for (const Case& c : cases) {
      Operands o(c.M, c.H, st);
      for (const std::string op : {"forward", "backward_input", "backward_weight"}) {
        if (c.forward_only && op != "forward") continue;
        std::vector<double> us;
        for (int r = 0; r < ranks; ++r) {
          try {
            us.push_back(1e3 * time([&] { o.run(*blas[size_t(r)], op, prec == Precision::Bf16, st); }));
          } catch (const std::out_of_range&) {
            break;  // the heuristic offers no more answers for this product
          }
        }
        if (us.empty()) continue;  // rank 0 always exists (Blas throws CudaError otherwise)
        const size_t best = size_t(std::min_element(us.begin(), us.end()) - us.begin());
        const double flops = 2.0 * c.M * c.H * c.H;
        std::printf("%-5s %-16s %-18s %6dx%-5d %9.1f %9.1f %5zu %6.2fx %8.1f  [", precision_name(prec), op.c_str(),
                    c.name, c.M, c.H, us[0], us[best], best, us[best] > 0 ? us[0] / us[best] : 1.0,
                    us[best] > 0 ? flops / us[best] * 1e-6 : 0.0);
        for (double u : us) std::printf(" %.1f", u);
        std::printf(" ]\n");
        rows.push_back({{"precision", precision_name(prec)},
                        {"case", c.name},
                        {"op", op},
                        {"M", c.M},
                        {"H", c.H},
                        {"us", us},
                        {"first_us", us[0]},
                        {"best_us", us[best]},
                        {"best_rank", best},
                        {"tflops_best", us[best] > 0 ? flops / us[best] * 1e-6 : 0.0}});
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
  app.add_option("--ranks", ranks, "heuristic answers tried per product (rank 0 is the engine's)")
      ->check(CLI::Range(1, 32));
  app.add_option("--repeats", repeats, "timed calls per answer (median)")->check(CLI::Range(1, 1000));
  app.add_option("--json", json_path, "also write the rows as JSON");
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "bench_gemm_algos_cuda")) return *code;
  try {
    cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
    cudaStream_t st = stream.get();
#if defined(GRPO_SIMT)
    std::printf("SIMT build: the device is the CPU emulator, timings are meaningless; each product runs once.\n");
    (void)repeats;
    print_header();
    const nlohmann::json rows = survey({{"smoke", 300, 40, false}}, ranks, st, [&](const std::function<void()>& f) {
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
    const nlohmann::json rows = survey(cases, ranks, st, [&](const std::function<void()>& f) {
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
