// The rng_fill test kernel (kernels/rng_check.h): one thread per (step, index, block) counter.
#include "core/launch.h"
#include "core/vector_access.h"
#include "kernels/rng_check.h"

namespace grpo {
namespace {

__global__ void rng_fill_kernel(uint4* out, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t n_step,
                                uint32_t n_index, uint32_t n_block) {
  const size_t id = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const size_t total = size_t{n_step} * n_index * n_block;
  if (id >= total) return;
  const uint32_t b = static_cast<uint32_t>(id % n_block);
  const uint32_t ix = static_cast<uint32_t>(id / n_block % n_index);
  const uint32_t st = static_cast<uint32_t>(id / n_block / n_index);
  const Bits4 r = draw4(seed, purpose, epoch, st, ix, b);
  out[id] = make_uint4(r.x, r.y, r.z, r.w);
}

}  // namespace

void rng_fill_cuda(uint32_t* out, uint64_t seed, Purpose purpose, uint32_t epoch, uint32_t n_step, uint32_t n_index,
                   uint32_t n_block, cudaStream_t stream) {
  const size_t total = size_t{n_step} * n_index * n_block;
  if (total == 0) return;
  launch(rng_fill_kernel, dim3(ceil_div(total, 128)), dim3(128), 0, stream, vector_at<uint4>(out), seed, purpose, epoch,
         n_step, n_index, n_block);
}

}  // namespace grpo
