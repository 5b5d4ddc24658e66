#include "engine/profiler.h"

#if !defined(GRPO_SIMT)
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#endif

#include "kernels/check.h"

namespace grpo {

void cuda_profiler_start() {
#if !defined(GRPO_SIMT)
  CUDA_CHECK(cudaProfilerStart());
#endif
}

void cuda_profiler_stop() {
#if !defined(GRPO_SIMT)
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaProfilerStop());
#endif
}

}  // namespace grpo
