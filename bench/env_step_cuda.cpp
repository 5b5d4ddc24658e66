// Throughput of the step kernel (games_step_cuda, Philox draws, observations written): games x
// steps per second, timed with CUDA events around `steps` back-to-back launches on one stream.
// Under the SIMT build the kernel runs on the CPU emulator: the numbers are not GPU timings.
#include <cstdint>

#include "bench/parse_flags.h"
#include "bench/env_step_common.h"
#include "core/errors.h"
#include "env/games.h"
#include "core/cuda_check.h"

namespace {
template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(size_t n) { CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(T))); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};
}  // namespace

int main(int argc, char** argv) {
  using namespace grpo;
  CLI::App app{"env_step_cuda: step-kernel game-step throughput"};
  bench::EnvStepOptions o;
#if defined(GRPO_SIMT)
  const char* note = "SIMT emulator on the CPU: not a GPU timing, only a smoke run";
  o.replicas = {32};
  o.steps = 20;
#else
  const char* note = "";
  o.replicas = {32, 256, 4096, 65536};
#endif
  bench::add_env_step_options(app, o);
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "env_step_cuda")) return *code;
  try {
    o.game.validate();
    const GameConfig& c = o.game;
    std::vector<bench::EnvStepResult> results;
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int r : o.replicas) {
      const int n = c.groups() * r;
      Dev<unsigned char> block(games_state_bytes(c, n));
      const GamesView v = make_games_view(c, n, block.p);
      Dev<float> obs(size_t(n) * c.obs_dim()), reward(n);
      const auto host_actions = bench::random_actions(n);
      Dev<int32_t> actions(host_actions.size() * size_t(n));
      for (size_t k = 0; k < host_actions.size(); ++k)
        CUDA_CHECK(cudaMemcpy(actions.p + k * n, host_actions[k].data(), sizeof(int32_t) * n, cudaMemcpyHostToDevice));
      Dev<uint32_t> epoch(1);
      CUDA_CHECK(cudaMemset(epoch.p, 0, sizeof(uint32_t)));
      games_reset_cuda(c, v, r, 1, epoch.p, obs.p, stream);
      games_step_cuda(c, v, actions.p, 1, epoch.p, 0, reward.p, obs.p, stream);  // warm-up
      CUDA_CHECK(cudaEventRecord(start, stream));
      for (int t = 0; t < o.steps; ++t)
        games_step_cuda(c, v, actions.p + size_t(t % host_actions.size()) * n, 1, epoch.p, uint32_t(t + 1), reward.p,
                        obs.p, stream);
      CUDA_CHECK(cudaEventRecord(stop, stream));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      results.push_back({n, o.steps, ms * 1e-3});
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaStreamDestroy(stream));
    bench::report("env_step_cuda", "cuda", note, c, results, o.json);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "env_step_cuda: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "env_step_cuda: fatal: %s\n", e.what());
    return 1;
  }
  return 0;
}
