// Helpers shared by the test suites: random inputs, poisoned outputs, tolerances (docs/design.md),
// and device buffers for the *_cuda tests.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#endif

namespace grpo::test {

// Fresh random values in [lo, hi); the seed comes from the test so failures reproduce.
inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// A quiet NaN with a recognisable payload: any element an op forgot to write stays NaN.
inline float poison_value() {
  const uint32_t bits = 0x7FC0DEADu;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline std::vector<float> poisoned(size_t n) { return std::vector<float>(n, poison_value()); }

// Elementwise: |got - ref| <= atol + rtol |ref| everywhere (1e-5 + 1e-4 |ref| for fp32 ops).
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& ref,
                                            double atol = 1e-5, double rtol = 1e-4) {
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    if (!(std::fabs(g - r) <= atol + rtol * std::fabs(r)))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << r;
  }
  return ::testing::AssertionSuccess();
}

// Relative L2 error ||got - ref|| / ||ref|| (reductions and products: <= 1e-5; TF32: <= 1e-3).
template <class A, class B>
double rel_l2(const A& got, const B& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(got[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

#if defined(GRPO_HAVE_CUDA)
// Skips (never passes) a test when no CUDA device answers. Under the SIMT flavour the emulator
// reports one device, so the same test runs on the CPU.
#define GRPO_REQUIRE_DEVICE()                                                  \
  do {                                                                         \
    int count_ = 0;                                                            \
    if (cudaGetDeviceCount(&count_) != cudaSuccess || count_ == 0) {           \
      (void)cudaGetLastError();                                                \
      GTEST_SKIP() << "needs a CUDA GPU (none found); the SIMT build runs it"; \
    }                                                                          \
  } while (0)

// Owning device array; copies are explicit and synchronous (tests only, never in the engine).
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T))); }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) { upload(v); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& v) {
    CUDA_CHECK(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};
#endif

}  // namespace grpo::test
