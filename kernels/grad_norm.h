// Global L2 norm of the gradient slab and the clip factor (docs/spec/training.md step 6), computed on
// the device into the TrainScalars so that no host read is needed (docs/design.md principle 1).
//
// Contract (kernel and host twin alike):
//   sumsq      = sum over i < n of grads[i]^2, accumulated in DOUBLE (each float square is exact
//                in double, so the only error is the double additions: ~n * 2^-53 relative;
//                the order is fixed, so the device result is deterministic run to run)
//   norm       = sqrt(sumsq)                           -> s->grad_norm (rounded to float)
//   k          = max_norm / (norm + 1e-6), in double   -> s->clip_scale = k < 1 ? k : 1
//   nonfinite  : if norm is NaN or infinite, s->nonfinite = 1 (raised, never cleared here:
//                advance_schedule clears it after AdamW has skipped the update)
// Device: two stages, no atomics. Stage 1: grad_norm_blocks(n) blocks of 256 threads, each a
// grid-stride loop of 16-byte loads, double partials per block into scratch. Stage 2: one block
// sums the partials in a fixed order and writes the scalars. Bytes moved: 4n read, 16 per block
// of scratch, 64 of scalars.
// Requirements: grads 16-byte aligned (a slab from cudaMalloc), scratch 8-byte aligned with
// grad_norm_scratch_floats(n) floats (it holds doubles); n may be anything, 0 included.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstddef>

#include "core/host_device.h"
#include "kernels/train_scalars.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

constexpr unsigned kGradNormThreads = 256;
constexpr unsigned kGradNormMaxBlocks = 1024;

// Stage-1 block count: a function of n only (never of the device), so the summation order,
// and hence the result, is the same on every GPU.
inline unsigned grad_norm_blocks(size_t n) {
  const size_t per_block = size_t{kGradNormThreads} * 4 * 8;  // ~8 float4 per thread
  const size_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1u : (b > kGradNormMaxBlocks ? kGradNormMaxBlocks : static_cast<unsigned>(b));
}
inline size_t grad_norm_scratch_floats(size_t n) { return 2 * size_t{grad_norm_blocks(n)}; }

// The scalars from the sum of squares; shared by the kernel and the host twin.
GRPO_HD void grad_norm_finish(double sumsq, float max_norm, TrainScalars* s) {
  const double norm = sqrt(sumsq);
  s->grad_norm = static_cast<float>(norm);
  const double k = static_cast<double>(max_norm) / (norm + 1e-6);
  s->clip_scale = k < 1.0 ? static_cast<float>(k) : 1.0f;
  if (!(norm <= DBL_MAX)) s->nonfinite = 1;  // false for +inf and NaN alike
}

// Host twin: a plain sequential double sum. `scratch` is unused (may be null); it is in the
// signature so that both executors call the op the same way.
void grad_norm_host(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch);

#if defined(GRPO_HAVE_CUDA)
// grads, s and scratch are device pointers; two kernels in `stream`.
void grad_norm_cuda(const float* grads, size_t n, TrainScalars* s, float max_norm, float* scratch, cudaStream_t stream);
#endif

}  // namespace grpo
