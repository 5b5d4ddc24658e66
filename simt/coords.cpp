// Definitions of the built-in coordinates. simt.h declares them `extern const` (each is
// constant within a fiber); only this file, which does not include simt.h, sees them writable.
#include <vector_types.h>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace simt::detail {
void set_coords(const uint3& thread, const uint3& block, const dim3& block_dim, const dim3& grid_dim) {
  threadIdx = thread;
  blockIdx = block;
  blockDim = block_dim;
  gridDim = grid_dim;
}
}  // namespace simt::detail
