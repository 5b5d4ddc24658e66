// A tiny op that only exists to test warp_sums_spread (kernels/reduce_block.h), on a GPU as on the
// emulator (tests/kernels/test_reduce_cuda.cpp): one warp, lane l holding in[l V .. l V + V),
// writes out[l], the sum of value l / kSpreadLanes<V> that the lane is left with.
#pragma once
#include <vector>

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

constexpr unsigned kSpreadCheckMaxValues = 8;

// Host twin: the same tree, addition for addition, so the device's lanes must match it bit for
// bit. V from 1 to kSpreadCheckMaxValues.
inline std::vector<float> warp_sums_spread_host(const std::vector<float>& in, unsigned V) {
  unsigned P = 1;
  while (P < V) P *= 2;
  std::vector<std::vector<float>> v(32, std::vector<float>(P, 0.f));
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned i = 0; i < V; ++i) v[l][i] = in[l * V + i];
  unsigned o = 16;
  for (unsigned n = P; n > 1; n /= 2, o /= 2) {
    const std::vector<std::vector<float>> was = v;
    for (unsigned l = 0; l < 32; ++l) {
      const bool upper = (l & o) != 0;
      for (unsigned i = 0; i < n / 2; ++i) {
        const float keep = upper ? was[l][i + n / 2] : was[l][i];
        const float got = upper ? was[l ^ o][i + n / 2] : was[l ^ o][i];  // the partner's share of that half
        v[l][i] = keep + got;
      }
    }
  }
  for (; o > 0; o /= 2) {
    const std::vector<std::vector<float>> was = v;
    for (unsigned l = 0; l < 32; ++l) v[l][0] = was[l][0] + was[l ^ o][0];
  }
  std::vector<float> out(32);
  for (unsigned l = 0; l < 32; ++l) out[l] = v[l][0];
  return out;
}

#if defined(GRPO_HAVE_CUDA)
// in: 32 V floats, out: 32 floats, device memory; V from 1 to kSpreadCheckMaxValues.
void warp_sums_spread_cuda(const float* in, float* out, unsigned V, cudaStream_t stream);
#endif

}  // namespace grpo
