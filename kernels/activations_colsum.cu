// Stage 2 of the deterministic column reductions (activations_colsum.h).
#include "core/grid_dependency.cuh"
#include "kernels/activations_colsum.cuh"
#include "core/launch.h"

namespace grpo::colsum {

// blockIdx.y picks the quantity; neighbouring threads read neighbouring columns (coalesced).
__global__ void finish_kernel(const float* partial, unsigned chunks, int N, float* out0, float* out1) {
  follow_previous_kernel();
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= unsigned(N)) return;
  (blockIdx.y == 0 ? out0 : out1)[col] = finish_column(partial + size_t(blockIdx.y) * chunks * N + col, chunks, N);
}

void finish_cuda(const float* partial, unsigned chunks, int N, float* out0, float* out1, cudaStream_t stream) {
  if (N <= 0) return;
  launch_overlapped(finish_kernel, dim3(ceil_div(size_t(N), 128), out1 ? 2 : 1), dim3(128), 0, stream, partial, chunks,
                    N, out0, out1);
}

}  // namespace grpo::colsum
