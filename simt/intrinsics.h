// Device intrinsics for the SIMT emulator: atomics, bit tricks, fast math, min/max.
// Included by simt.h. To add one: give it the exact CUDA name and signature, implement it with
// plain C++ (GCC builtins are fine), keep device rounding differences in mind (README.md), and
// add a check to test_intrinsics.cpp. Threads are fibers on one OS thread and never switch inside
// an intrinsic, so atomics are atomic; the __atomic builtins keep them honest anyway.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace simt::detail {
template <class To, class From>
inline To bit_cast(From f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
// Read-modify-write through a CAS loop for types without a native atomic op (float, double).
template <class T, class Bits, class F>
inline T atomic_rmw(T* p, F f) {
  Bits* b = reinterpret_cast<Bits*>(p);
  Bits old = __atomic_load_n(b, __ATOMIC_SEQ_CST);
  for (;;) {
    const Bits next = bit_cast<Bits>(f(bit_cast<T>(old)));
    if (__atomic_compare_exchange_n(b, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return bit_cast<T>(old);
  }
}
}  // namespace simt::detail

// ---- atomics (return the old value, as in CUDA) ----
#define SIMT_ATOMIC_INT_(T)                                                                                  \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }                       \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }                       \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }                     \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }                         \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }                       \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }                       \
  inline T atomicCAS(T* p, T cmp, T v) {                                                                     \
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                      \
    return cmp;                                                                                              \
  }                                                                                                          \
  inline T atomicMax(T* p, T v) {                                                                            \
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                            \
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) { \
    }                                                                                                        \
    return old;                                                                                              \
  }                                                                                                          \
  inline T atomicMin(T* p, T v) {                                                                            \
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                            \
    while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) { \
    }                                                                                                        \
    return old;                                                                                              \
  }
SIMT_ATOMIC_INT_(int)
SIMT_ATOMIC_INT_(unsigned)
SIMT_ATOMIC_INT_(unsigned long long)
SIMT_ATOMIC_INT_(long long)
#undef SIMT_ATOMIC_INT_

inline float atomicAdd(float* p, float v) {
  return simt::detail::atomic_rmw<float, uint32_t>(p, [v](float x) { return x + v; });
}
inline double atomicAdd(double* p, double v) {
  return simt::detail::atomic_rmw<double, uint64_t>(p, [v](double x) { return x + v; });
}
inline float atomicExch(float* p, float v) {
  return simt::detail::atomic_rmw<float, uint32_t>(p, [v](float) { return v; });
}

// One OS thread runs every block: a compiler barrier is the whole fence. (GCC's ThreadSanitizer
// instrumentation, which the checks use, refuses __atomic_thread_fence.)
inline void __threadfence() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// Device side of a conditional graph node (graph.cpp holds the handles): the value the node
// reads when it is next evaluated.
namespace simt::detail {
void set_conditional(cudaGraphConditionalHandle handle, unsigned value);
}
inline void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned value) {
  simt::detail::set_conditional(handle, value);
}

template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// ---- bits ----
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
// The SM's cycle counter: here the host's steady clock in nanoseconds, monotonic per thread as
// the counter is per SM (core/phase_clock.h takes differences within a block only).
inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline unsigned __float_as_uint(float x) { return simt::detail::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return simt::detail::bit_cast<float>(x); }
inline int __float_as_int(float x) { return simt::detail::bit_cast<int>(x); }
inline float __int_as_float(int x) { return simt::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return simt::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return simt::detail::bit_cast<double>(x); }

// ---- math: the fast intrinsics are computed exactly here (the device's are approximate) ----
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __exp10f(float x) { return std::pow(10.f, x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanhf(float x) { return std::tanh(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __saturatef(float x) { return x > 0.f ? (x < 1.f ? x : 1.f) : 0.f; }  // NaN -> 0
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(std::floor(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(std::ceil(x)); }

// ---- min/max overloads that CUDA declares for device code ----
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
