// Vectorised tanh-GELU of kernels/gelu_vec_host.h: one generic body over GCC vector extensions,
// instantiated four lanes wide (SSE2, the build's baseline) and eight wide in a function
// compiled for AVX2 and picked at run time (as dropout_host.cpp does for Philox). No FMA in
// either (target "avx2" alone never contracts), so both give the same bits.
#include <cstdint>
#include <cstring>

#include "cpu/features.h"
#include "kernels/gelu.h"
#include "kernels/gelu_vec_host.h"

namespace grpo::hostmath {

namespace {

// The 8-lane helpers below pass vectors by value but are always inlined into the AVX2 functions
// and local to this file, so the "AVX vector return without AVX" ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

#define GRPO_INLINE inline __attribute__((always_inline))

template <class V, class I>
GRPO_INLINE V tanh_v(V y) {
  const I sign = (I)y & int32_t(0x80000000u);
  V ay = (V)((I)y & 0x7fffffff);
  ay = ay < 9.f ? ay : V{} + 9.f;  // tanh(9) rounds to 1.f; keeps exp's argument >= -18
  const V x = -2.f * ay;
  const I n = -__builtin_convertvector(0.5f - x * 1.44269504088896341f, I);  // round(x log2 e), x <= 0
  const V fn = __builtin_convertvector(n, V);
  const V r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const V e = p * (V)((n + 127) << 23);
  const V t = (1.f - e) / (1.f + e);
  return (V)((I)t | sign);
}

template <class V>
GRPO_INLINE V tanh_arg(V v) {
  return kGeluC * (v + kGeluA * v * v * v);
}

// body(i, v, count) over n elements, W at a time; the tail through a padded copy.
template <class V, class Body>
GRPO_INLINE void for_each_v(int n, const float* x, Body body) {
  constexpr int W = int(sizeof(V) / sizeof(float));
  int i = 0;
  V v;
  for (; i + W <= n; i += W) {
    std::memcpy(&v, x + i, sizeof v);
    body(i, v, W);
  }
  if (i < n) {
    float pad[W] = {};
    for (int k = 0; i + k < n; ++k) pad[k] = x[i + k];
    std::memcpy(&v, pad, sizeof v);
    body(i, v, n - i);
  }
}

template <class V>
GRPO_INLINE void store_v(float* p, V v, int count) {
  constexpr int W = int(sizeof(V) / sizeof(float));
  if (count == W) {
    std::memcpy(p, &v, sizeof v);
  } else {
    float tmp[W];
    std::memcpy(tmp, &v, sizeof v);
    for (int k = 0; k < count; ++k) p[k] = tmp[k];
  }
}

template <class V, class I>
GRPO_INLINE void gelu_body(const float* x, float* g, int n) {
  for_each_v<V>(n, x,
                [&](int i, V v, int count) { store_v(g + i, 0.5f * v * (1.f + tanh_v<V, I>(tanh_arg(v))), count); });
}

template <class V, class I>
GRPO_INLINE void gelu_grad_body(const float* x, float* g, float* dg, int n) {
  for_each_v<V>(n, x, [&](int i, V v, int count) {
    const V t = tanh_v<V, I>(tanh_arg(v));
    store_v(dg + i, 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * kGeluC * (1.f + 3.f * kGeluA * v * v), count);
    store_v(g + i, 0.5f * v * (1.f + t), count);
  });
}

typedef float f4 __attribute__((vector_size(16)));
typedef int32_t i4 __attribute__((vector_size(16)));
typedef float f8 __attribute__((vector_size(32)));
typedef int32_t i8 __attribute__((vector_size(32)));
typedef float f16 __attribute__((vector_size(64)));
typedef int32_t i16 __attribute__((vector_size(64)));

#if defined(__x86_64__) || defined(__i386__)
#define GRPO_GELU_AVX2 1
__attribute__((target("avx2"))) void gelu_avx2(const float* x, float* g, int n) { gelu_body<f8, i8>(x, g, n); }
__attribute__((target("avx2"))) void gelu_grad_avx2(const float* x, float* g, float* dg, int n) {
  gelu_grad_body<f8, i8>(x, g, dg, n);
}
__attribute__((target("avx512f"))) void gelu_avx512(const float* x, float* g, int n) { gelu_body<f16, i16>(x, g, n); }
__attribute__((target("avx512f"))) void gelu_grad_avx512(const float* x, float* g, float* dg, int n) {
  gelu_grad_body<f16, i16>(x, g, dg, n);
}
#endif

}  // namespace

void gelu_n(const float* x, float* g, int n) {
#ifdef GRPO_GELU_AVX2
  if (cpu_has_avx512()) return gelu_avx512(x, g, n);
  if (cpu_has_avx2()) return gelu_avx2(x, g, n);
#endif
  gelu_body<f4, i4>(x, g, n);
}

void gelu_and_grad_n(const float* x, float* g, float* dg, int n) {
#ifdef GRPO_GELU_AVX2
  if (cpu_has_avx512()) return gelu_grad_avx512(x, g, dg, n);
  if (cpu_has_avx2()) return gelu_grad_avx2(x, g, dg, n);
#endif
  gelu_grad_body<f4, i4>(x, g, dg, n);
}

}  // namespace grpo::hostmath
