// What the host can do at best, measured where the benchmark runs: OpenBLAS sgemm GFLOP/s on a
// large square product (the FLOP ceiling the epoch and kernel benchmarks compare against) and a
// streaming copy's GB/s. Steady clock, a warm-up call, median of repeats.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <cblas.h>
#include <omp.h>

#include "core/median.h"

namespace grpo::bench {

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

using grpo::median;

// Median seconds of `repeats` timed calls of f after `warmup` untimed ones.
inline double time_median(const std::function<void()>& f, int repeats, int warmup = 1) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const double t0 = seconds_now();
    f();
    t.push_back(seconds_now() - t0);
  }
  return median(t);
}

inline std::vector<float> filled(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// GFLOP/s of C[n,n] = A B^T (the same NoTrans/Trans form as linear_forward) on OpenBLAS's own
// threads, as many as OpenMP may use; the host twins turn OpenBLAS's threading off (they split
// products themselves), so it is set for the measurement and put back after.
inline double sgemm_gflops(int n, int repeats) {
  const auto a = filled(size_t(n) * n, 1), b = filled(size_t(n) * n, 2);
  std::vector<float> c(size_t(n) * n);
  const int blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(omp_get_max_threads());
  struct Restore {
    int n;
    ~Restore() { openblas_set_num_threads(n); }
  } restore{blas_threads};
  const double s = time_median(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
      },
      repeats);
  return 2.0 * n * n * double(n) / s * 1e-9;
}

// GB/s of a memcpy over `bytes` (counted read + write) well beyond the caches.
inline double copy_gbps(size_t bytes, int repeats) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  const double s = time_median([&] { std::memcpy(b.data(), a.data(), bytes); }, repeats);
  return 2.0 * double(bytes) / s * 1e-9;
}

}  // namespace grpo::bench
