// Checked CUDA and cuBLAS calls. Errors become exceptions that carry the call, file and line;
// they travel up to main, which prints them and chooses the exit code (no exit() down here).
#pragma once
#include <stdexcept>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace grpo {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " + cudaGetErrorName(e) +
                  " (" + cudaGetErrorString(e) + ")");
}

inline void cublas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: cuBLAS status " +
                  std::to_string(static_cast<int>(s)));
}

}  // namespace grpo

#define CUDA_CHECK(call) ::grpo::cuda_check((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::grpo::cublas_check((call), #call, __FILE__, __LINE__)
