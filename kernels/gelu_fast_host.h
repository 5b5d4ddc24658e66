// Vectorised tanh-GELU for the host twins (gelu_host.cpp, layernorm_host.cpp). glibc's tanhf
// is a scalar call of ~15 ns here; the host executor evaluates GELU about five times per hidden
// activation per epoch (14M activations at the small preset), so the twins use this instead:
// tanh(y) = sign(y) (1 - e) / (1 + e) with e = exp(-2 min(|y|, 9)) from Cephes' expf polynomial,
// four lanes at a time in GCC vector extensions (SSE2 is the baseline: the build has no -march;
// auto-vectorisation failed on the clamp, which GCC turns into a branch).
// Error against tanhf: a few float ulps relative for |y| > 0.1 and under 1e-7 absolute below,
// well inside the twins' 1e-5 + 1e-4|ref| tolerances.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/gelu.h"

namespace grpo::hostmath {

typedef float f4 __attribute__((vector_size(16)));
typedef int32_t i4 __attribute__((vector_size(16)));

inline f4 splat(float v) { return f4{v, v, v, v}; }

inline f4 tanh4(f4 y) {
  const i4 sign = (i4)y & int32_t(0x80000000u);
  f4 ay = (f4)((i4)y & 0x7fffffff);
  ay = ay < splat(9.f) ? ay : splat(9.f);  // tanh(9) rounds to 1.f; keeps exp's argument >= -18
  const f4 x = -2.f * ay;
  const i4 n = -__builtin_convertvector(0.5f - x * 1.44269504088896341f, i4);  // round(x log2 e), x <= 0
  const f4 fn = __builtin_convertvector(n, f4);
  const f4 r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  f4 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const f4 e = p * (f4)((n + 127) << 23);
  const f4 t = (1.f - e) / (1.f + e);
  return (f4)((i4)t | sign);
}

inline f4 load4(const float* p) {
  f4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, f4 v) { std::memcpy(p, &v, sizeof v); }

// Runs body(x4) -> writes over n elements four at a time; the tail goes through a padded copy.
template <class Body>
inline void for_each4(int n, const float* x, Body body) {
  int i = 0;
  for (; i + 4 <= n; i += 4) body(i, load4(x + i), 4);
  if (i < n) {
    float pad[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; i + k < n; ++k) pad[k] = x[i + k];
    body(i, load4(pad), n - i);
  }
}

inline void store_n(float* p, f4 v, int count) {
  if (count == 4) {
    store4(p, v);
  } else {
    float tmp[4];
    store4(tmp, v);
    for (int k = 0; k < count; ++k) p[k] = tmp[k];
  }
}

inline f4 tanh_arg4(f4 v) { return kGeluC * (v + kGeluA * v * v * v); }

// g[i] = gelu(x[i]).
inline void gelu_n(const float* x, float* g, int n) {
  for_each4(n, x, [&](int i, f4 v, int count) { store_n(g + i, 0.5f * v * (1.f + tanh4(tanh_arg4(v))), count); });
}

// g[i] = gelu(x[i]) and dg[i] = gelu'(x[i]) from one tanh (g may alias x).
inline void gelu_and_grad_n(const float* x, float* g, float* dg, int n) {
  for_each4(n, x, [&](int i, f4 v, int count) {
    const f4 t = tanh4(tanh_arg4(v));
    store_n(dg + i, 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * kGeluC * (1.f + 3.f * kGeluA * v * v), count);
    store_n(g + i, 0.5f * v * (1.f + t), count);
  });
}

// Below this many elements an op runs on the calling thread: an OpenMP fork/join (and the
// worker's spinning on a shared two-core machine) costs more than the work.
constexpr double kParallelElements = 1 << 14;

}  // namespace grpo::hostmath
