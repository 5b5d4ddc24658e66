#include "engine/executor.h"

#include <cstdio>

#include "core/errors.h"
#include "engine/init.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

bool cuda_device_available(std::string* why) {
#if defined(GRPO_HAVE_CUDA)
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found";
    return false;
  }
  return true;
#else
  if (why) *why = "this grpo was built without CUDA (host flavour)";
  return false;
#endif
}

void require_memory(size_t need, size_t available, const char* where) {
  if (need <= available) return;
  auto gib = [](size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(size_t{1} << 30));
    return std::string(buf);
  };
  throw UsageError("this configuration needs about " + gib(need) + " of " + where + " memory and only " +
                   gib(available) + " is available: lower --hidden-size, --batch-size or --max-steps");
}

std::unique_ptr<Executor> make_executor(const TrainConfig& c, bool quiet) {
  std::string why;
  switch (c.backend) {
    case Backend::Host:
      return make_host_executor(c);
    case Backend::Cuda:
      if (!cuda_device_available(&why)) throw UsageError("--backend cuda: " + why);
#if defined(GRPO_HAVE_CUDA)
      return make_cuda_executor(c);
#else
      break;
#endif
    case Backend::Auto:
#if defined(GRPO_SIMT)
      // The "device" of a simt build is the CPU emulator: correct, but far too slow to train on.
      if (!quiet)
        std::fprintf(stderr, "grpo: simt build: training on the host executor (--backend cuda runs the emulator)\n");
      return make_host_executor(c);
#elif defined(GRPO_HAVE_CUDA)
      if (cuda_device_available(&why)) return make_cuda_executor(c);
#endif
      if (!quiet) std::fprintf(stderr, "grpo: no GPU (%s): training on the host executor\n", why.c_str());
      return make_host_executor(c);
  }
  return make_host_executor(c);
}

RunState initial_state(const TrainConfig& c) {
  const ParamLayout l(c.hidden_size, c.obs_dim());
  RunState s;
  s.slabs.assign(4 * l.total, 0.f);
  init_params(s.slabs.data(), l, c.seed);
  s.scalars = train_scalars_start(c.lr);
  return s;
}

}  // namespace grpo
