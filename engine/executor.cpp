#include "engine/executor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

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

size_t available_host_bytes() {
  size_t have = 0;
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") {
      have = kib * 1024;
      break;
    }
    in.ignore(1 << 10, '\n');
  }
  if (have == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) have = size_t(pages) * size_t(page);
  }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    have = have == 0 ? size_t(as.rlim_cur) : std::min(have, size_t(as.rlim_cur));
  return have;
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
  const auto host = [&c] {
    if (!c.gemm_tuning.empty())
      throw UsageError("--gemm-tuning " + c.gemm_tuning + ": the host executor has no cuBLASLt (--backend cuda)");
    return make_host_executor(c);
  };
  switch (c.backend) {
    case Backend::Host:
      return host();
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
      if (c.gemm_tuning.empty() && !quiet)
        std::fprintf(stderr, "grpo: simt build: training on the host executor (--backend cuda runs the emulator)\n");
      return host();
#elif defined(GRPO_HAVE_CUDA)
      if (cuda_device_available(&why)) return make_cuda_executor(c);
#endif
      if (c.gemm_tuning.empty() && !quiet)
        std::fprintf(stderr, "grpo: no GPU (%s): training on the host executor\n", why.c_str());
      return host();
  }
  return host();
}

RunState initial_state(const TrainConfig& c) {
  const ParamLayout l(c.hidden_size, c.obs_dim());
  RunState s;
  s.slabs.assign(4 * l.total, 0.f);
  init_params(s.slabs.data(), l, c.seed);
  s.scalars = train_scalars_start(c.lr, 0, 0, c.lr_anneal_epochs());
  return s;
}

}  // namespace grpo
