// Matrix products of the policy network, one convention everywhere: row-major tensors and
// PyTorch's [out, in] weight layout. With X: [M, K] (M samples, K inputs), W: [N, K], Y: [M, N]:
//   linear_forward:          Y  = X W^T (+ bias[N] on every row when bias != nullptr)
//   linear_backward_input:   dX = dY W                        dX: [M, K]
//   linear_backward_weight:  dW = dY^T X, or dW += dY^T X when accumulate    dW: [N, K]
//   bias_grad:               db = column sums of dY           db: [N]  (overwritten)
// The host twins call OpenBLAS; the *_cuda launchers call cuBLAS through a Blas context. fp32
// throughout; TF32 tensor cores only when the Blas context was created with tf32 = true.
// Outputs must not alias inputs.
#pragma once
#include <cstddef>

#include "kernels/activations_colsum.h"

#if defined(GRPO_HAVE_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace grpo {

void linear_forward_host(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K);
void linear_backward_input_host(const float* dY, const float* W, float* dX, int M, int N, int K);
void linear_backward_weight_host(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate);

// Scratch floats bias_grad needs (the same for host and cuda; host ignores it).
inline size_t bias_grad_scratch_floats(int M, int N) { return size_t(colsum::chunks(size_t(M))) * size_t(N); }
void bias_grad_host(const float* dY, float* db, int M, int N, float* scratch);

// Throws std::invalid_argument unless M >= 0, N >= 1, K >= 1.
void check_linear_shape(int M, int N, int K, const char* op);

#if defined(GRPO_HAVE_CUDA)
struct BlasOptions {
  bool tf32 = false;                      // TF32 tensor-core math (relative error ~1e-3): opt in
  size_t workspace_bytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper
};

// One cuBLAS handle and the workspace it owns. Create it before any stream capture: the
// constructor allocates. cuBLAS then never allocates on its own (notes/cuda-graphs.md), because
// every cublasSetStream is followed by cublasSetWorkspace with this workspace again (setting
// the stream resets the workspace to cuBLAS's pool). Host pointer mode: alpha and beta are
// constants baked into a captured graph. Not thread-safe; one per stream user.
class Blas {
 public:
  explicit Blas(BlasOptions options = {});
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  cublasHandle_t handle() const { return handle_; }
  bool tf32() const { return options_.tf32; }
  // Binds the handle to `stream` (and the workspace again) unless it is already bound to it.
  void bind(cudaStream_t stream);

 private:
  BlasOptions options_;
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool bound_ = false;
};

void linear_forward_cuda(Blas& blas, const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                         cudaStream_t stream);
void linear_backward_input_cuda(Blas& blas, const float* dY, const float* W, float* dX, int M, int N, int K,
                                cudaStream_t stream);
void linear_backward_weight_cuda(Blas& blas, const float* dY, const float* X, float* dW, int M, int N, int K,
                                 bool accumulate, cudaStream_t stream);
void bias_grad_cuda(const float* dY, float* db, int M, int N, float* scratch, cudaStream_t stream);
#endif

}  // namespace grpo
