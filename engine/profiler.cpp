#include "engine/profiler.h"

#if defined(GRPO_GPU)
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace grpo {

namespace {
void profiler_start() {
#if defined(GRPO_GPU)
  CUDA_CHECK(cudaProfilerStart());
#endif
}
void profiler_stop() {
#if defined(GRPO_GPU)
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaProfilerStop());
#endif
}
}  // namespace

void ProfileRange::before_launch(uint32_t epoch) {
  if (!enabled_) return;
  const bool inside = int64_t(epoch) >= first_ && int64_t(epoch) <= last_;
  if (inside && !open_) {
    profiler_start();
    open_ = true;
  } else if (!inside && open_) {
    finish();
  }
}

void ProfileRange::finish() {
  if (!open_) return;
  open_ = false;
  profiler_stop();
}

ProfileRange::~ProfileRange() {
  try {
    finish();
  } catch (...) {
    // A broken context at exit: the profile is lost either way, the run's error already reported.
  }
}

}  // namespace grpo
