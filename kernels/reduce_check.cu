// The warp_sums_spread test kernel (kernels/reduce_check.h): one warp.
#include <stdexcept>
#include <string>
#include <utility>

#include "core/launch.h"
#include "kernels/reduce_block.h"
#include "kernels/reduce_check.h"

namespace grpo {
namespace {

template <unsigned V>
__global__ void warp_sums_spread_kernel(const float* in, float* out) {
  float v[V];
#pragma unroll
  for (unsigned i = 0; i < V; ++i) v[i] = in[threadIdx.x * V + i];
  out[threadIdx.x] = warp_sums_spread(v);
}

template <unsigned... Vs>
void launch_for(unsigned V, const float* in, float* out, cudaStream_t stream, std::integer_sequence<unsigned, Vs...>) {
  ((V == Vs + 1 ? launch(warp_sums_spread_kernel<Vs + 1>, 1, 32, 0, stream, in, out) : void()), ...);
}

}  // namespace

void warp_sums_spread_cuda(const float* in, float* out, unsigned V, cudaStream_t stream) {
  if (V < 1 || V > kSpreadCheckMaxValues)
    throw std::invalid_argument("warp_sums_spread_cuda: " + std::to_string(V) + " values a lane, not 1 to " +
                                std::to_string(kSpreadCheckMaxValues));
  launch_for(V, in, out, stream, std::make_integer_sequence<unsigned, kSpreadCheckMaxValues>{});
}

}  // namespace grpo
