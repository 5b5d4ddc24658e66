// Standalone inverted dropout (the fused bias + GELU + dropout ops live in gelu.cu).
#include <algorithm>

#include "core/grid_dependency.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/dropout.h"
#include "core/launch.h"

namespace grpo {

// One thread per group of 4 columns of a row: one Philox call, one float4 in and out.
__global__ void dropout_apply_kernel(const float* x, float* y, int M, int N, DropoutSpec spec, bool vec) {
  follow_previous_kernel();
  ColumnGroup c;
  if (!column_group(M, N, c)) return;
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, c.row, c.g);
  const float scale = dropout_scale(spec.p);
  float v[4];
  load4(x + c.off, c.n, vec, v);
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) v[k] = (keep >> k & 1u) ? v[k] * scale : 0.f;
  store4(y + c.off, c.n, vec, v);
}

// Moves 8*M*N bytes (x in, y out) plus 4 for the epoch.
void dropout_apply_cuda(const float* x, float* y, int M, int N, const DropoutSpec& spec, cudaStream_t stream) {
  check_dropout(spec, "dropout_apply_cuda");
  if (M < 0 || N < 0) throw std::invalid_argument("dropout_apply_cuda: negative shape");
  if (M == 0 || N == 0) return;
  const bool vec = N % 4 == 0 && aligned16(x) && aligned16(y);
  const size_t threads = size_t(M) * ((N + 3) / 4);
  launch_overlapped(dropout_apply_kernel, dim3(ceil_div(threads, 256)), dim3(256), 0, stream, x, y, M, N, spec, vec);
}

}  // namespace grpo
