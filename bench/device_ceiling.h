// What the GPU can do at best, measured where the benchmark runs: device-to-device copy GB/s
// (counted read + write) and a large fp32 cuBLAS GEMM's GFLOP/s, CUDA events, median of repeats.
// Only meaningful on a real GPU (GRPO_GPU); the simt build's "device" is the CPU emulator.
#pragma once
#if defined(GRPO_GPU)  // never in simt: the emulator has no use for these (and lacks some calls)
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench/host_ceiling.h"
#include "core/cuda_check.h"

namespace grpo::bench {

// Median milliseconds of `repeats` event-timed runs of f on `stream` after one warm-up; before()
// runs ahead of each timed call, outside the events (e.g. an L2 flush).
template <class F, class Before>
double event_median_ms(cudaStream_t stream, int repeats, F&& f, Before&& before) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  f();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    before();
    CUDA_CHECK(cudaEventRecord(a, stream));
    f();
    CUDA_CHECK(cudaEventRecord(b, stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  return median(ms);
}
template <class F>
double event_median_ms(cudaStream_t stream, int repeats, F&& f) {
  return event_median_ms(stream, repeats, f, [] {});
}

// Evicts L2 between timed calls: a write over a buffer larger than any current L2 (H100: 50 MB).
class L2Flush {
 public:
  explicit L2Flush(size_t bytes = size_t(256) << 20) : bytes_(bytes) { CUDA_CHECK(cudaMalloc(&buf_, bytes_)); }
  ~L2Flush() { cudaFree(buf_); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void operator()(cudaStream_t s) const { CUDA_CHECK(cudaMemsetAsync(buf_, 0, bytes_, s)); }

 private:
  void* buf_ = nullptr;
  size_t bytes_;
};

inline double device_copy_gbps(size_t bytes, int repeats) {
  void *a = nullptr, *b = nullptr;
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMalloc(&b, bytes));
  const double ms = event_median_ms(
      nullptr, repeats, [&] { CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, nullptr)); });
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  return 2.0 * double(bytes) / (ms * 1e-3) * 1e-9;
}

// fp32 (no TF32) C[n,n] = A B^T through cuBLAS.
inline double cublas_sgemm_gflops(int n, int repeats) {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  const size_t bytes = size_t(n) * n * sizeof(float);
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMalloc(&b, bytes));
  CUDA_CHECK(cudaMalloc(&c, bytes));
  CUDA_CHECK(cudaMemset(a, 0, bytes));
  CUDA_CHECK(cudaMemset(b, 0, bytes));
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  const float one = 1.f, zero = 0.f;
  const double ms = event_median_ms(nullptr, repeats, [&] {
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n));
  });
  CUBLAS_CHECK(cublasDestroy(h));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  return 2.0 * double(n) * n * n / (ms * 1e-3) * 1e-9;
}

}  // namespace grpo::bench
#endif
