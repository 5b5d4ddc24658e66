#include "engine/init.h"

#include <cmath>
#include <cstring>

#include "core/rng.h"

namespace grpo {

namespace {
// Box-Muller on two exact uniforms from one Philox block; u1 is shifted off zero by half a step
// so log() is finite. Computed in double: the initial network is the same on every machine.
void fill_normal(float* out, size_t n, double stddev, uint64_t seed, uint32_t tensor) {
  for (size_t i = 0; i < n; i += 2) {
    const Bits4 b = draw4(seed, Purpose::Init, 0, tensor, static_cast<uint32_t>(i / 2));
    const double u1 = (double(b.x >> 8) + 0.5) * 0x1p-24;
    const double u2 = double(b.y >> 8) * 0x1p-24;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double two_pi = 6.283185307179586476925286766559;
    out[i] = static_cast<float>(stddev * r * std::cos(two_pi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(stddev * r * std::sin(two_pi * u2));
  }
}
void fill(float* out, size_t n, float v) {
  for (size_t i = 0; i < n; ++i) out[i] = v;
}
}  // namespace

void init_params(float* params, const ParamLayout& l, uint64_t seed) {
  std::memset(params, 0, l.total * sizeof(float));
  const int hidden = l[ParamLayout::Fc1W].rows;
  for (int i = 0; i < ParamLayout::kCount; ++i) {
    const ParamTensor& t = l[i];
    float* p = params + t.offset;
    switch (i) {
      case ParamLayout::FcInW:
        fill_normal(p, t.size(), 0.02, seed, i);
        break;
      case ParamLayout::Fc1W:
        fill_normal(p, t.size(), std::sqrt(2.0 / hidden), seed, i);
        break;
      case ParamLayout::FcOutW:
        fill_normal(p, t.size(), 0.01, seed, i);
        break;
      case ParamLayout::LnGamma:
        fill(p, t.size(), 1.f);
        break;
      default:
        fill(p, t.size(), 0.f);
        break;  // biases and beta
    }
  }
}

}  // namespace grpo
