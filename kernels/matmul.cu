// cuBLAS wrapper for the row-major, [out, in]-weight convention of matmul.h, the bias add that
// follows the forward GEMM, and the deterministic bias gradient.
//
// cuBLAS is column-major. A row-major [R, C] array is the column-major [C, R] array with the
// same memory, i.e. its transpose; so each row-major product is computed as its transpose:
//   Y = X W^T    ->  Y^T[N,M]  = (W^T)^T[N,K] X^T[K,M]     gemm(T, N, N, M, K, W, K, X, K, Y, N)
//   dX = dY W    ->  dX^T[K,M] = W^T[K,N] dY^T[N,M]        gemm(N, N, K, M, N, W, K, dY, N, dX, K)
//   dW = dY^T X  ->  dW^T[K,N] = X^T[K,M] (dY^T)^T[M,N]    gemm(N, T, K, N, M, X, K, dY, N, dW, K)
#include <algorithm>

#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/launch.h"
#include "kernels/matmul.h"

namespace grpo {

Blas::Blas(BlasOptions options) : options_(options) {
  CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    if (options_.workspace_bytes > 0) CUDA_CHECK(cudaMalloc(&workspace_, options_.workspace_bytes));
    CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, options_.workspace_bytes));
    CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
    CUBLAS_CHECK(cublasSetMathMode(handle_, options_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  } catch (...) {
    cudaFree(workspace_);
    cublasDestroy(handle_);
    throw;
  }
}

Blas::~Blas() {
  cublasDestroy(handle_);  // destructors do not throw: errors here are ignored
  cudaFree(workspace_);
}

void Blas::bind(cudaStream_t stream) {
  if (bound_ && stream == stream_) return;
  CUBLAS_CHECK(cublasSetStream(handle_, stream));
  CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, options_.workspace_bytes));
  stream_ = stream;
  bound_ = true;
}

// Y[row, col] += bias[col]; one thread per group of 4 columns of a row (float4 when N % 4 == 0).
__global__ void bias_add_kernel(float* __restrict__ Y, const float* __restrict__ bias, int M, int N, bool vec) {
  ColumnGroup c;
  if (!column_group(M, N, c)) return;
  float y[4], b[4];
  load4(Y + c.off, c.n, vec, y);
  load4(bias + 4 * c.g, c.n, vec, b);
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) y[k] += b[k];
  store4(Y + c.off, c.n, vec, y);
}

// GEMM: reads 4*(M*K + N*K) bytes, writes 4*M*N; the bias add reads and writes Y once more
// (8*M*N bytes) plus 4*N for the bias.
void linear_forward_cuda(Blas& blas, const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                         cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_forward_cuda");
  if (M == 0) return;
  blas.bind(stream);
  const float one = 1.f, zero = 0.f;
  CUBLAS_CHECK(cublasSgemm(blas.handle(), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W, K, X, K, &zero, Y, N));
  if (bias == nullptr) return;
  const bool vec = N % 4 == 0 && aligned16(Y) && aligned16(bias);
  const size_t threads = size_t(M) * ((N + 3) / 4);
  launch(bias_add_kernel, dim3(ceil_div(threads, 256)), dim3(256), 0, stream, Y, bias, M, N, vec);
}

// Reads 4*(M*N + N*K) bytes, writes 4*M*K.
void linear_backward_input_cuda(Blas& blas, const float* dY, const float* W, float* dX, int M, int N, int K,
                                cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_input_cuda");
  if (M == 0) return;
  blas.bind(stream);
  const float one = 1.f, zero = 0.f;
  CUBLAS_CHECK(cublasSgemm(blas.handle(), CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, &one, W, K, dY, N, &zero, dX, K));
}

// Reads 4*(M*N + M*K) bytes, writes 4*N*K (and reads it too when accumulating).
void linear_backward_weight_cuda(Blas& blas, const float* dY, const float* X, float* dW, int M, int N, int K,
                                 bool accumulate, cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_weight_cuda");
  if (M == 0) {  // an empty sum: dW = 0, or unchanged when accumulating
    if (!accumulate) CUDA_CHECK(cudaMemsetAsync(dW, 0, size_t(N) * K * sizeof(float), stream));
    return;
  }
  blas.bind(stream);
  const float one = 1.f, beta = accumulate ? 1.f : 0.f;
  CUBLAS_CHECK(cublasSgemm(blas.handle(), CUBLAS_OP_N, CUBLAS_OP_T, K, N, M, &one, X, K, dY, N, &beta, dW, K));
}

// Adds 4 columns of one row of dY to the column sums.
struct BiasGradRows {
  const float* dY;
  int N;
  bool vec;
  __device__ __forceinline__ void operator()(size_t row, unsigned col0, unsigned n, float (&acc)[1][4]) const {
    float d[4];
    load4(dY + row * N + col0, n, vec, d);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[0][k] += d[k];
  }
};

__global__ void bias_grad_kernel(BiasGradRows f, int M, unsigned rows_per_chunk, float* partial) {
  colsum::stage1<1>(f, M, f.N, rows_per_chunk, partial);
}

// Reads 4*M*N bytes; the partial sums move 8 * chunks * N more (chunks <= 256).
void bias_grad_cuda(const float* dY, float* db, int M, int N, float* scratch, cudaStream_t stream) {
  if (M < 0 || N < 0) throw std::invalid_argument("bias_grad_cuda: negative shape");
  if (N == 0) return;
  const BiasGradRows f{dY, N, N % 4 == 0 && aligned16(dY)};
  launch(bias_grad_kernel, colsum::stage1_grid(M, N), colsum::stage1_block(), colsum::smem_bytes(1), stream, f, M,
         colsum::rows_per_chunk(size_t(M)), scratch);
  colsum::finish_cuda(scratch, colsum::chunks(size_t(M)), N, db, nullptr, stream);
}

}  // namespace grpo
