// Y = X W^T (+ bias) for products with few rows: the rollout's fc1 at the small preset (136 x 512
// x 512) gives cuBLASLt's fp32 tiles a handful of thread blocks on 132 SMs, and the H100 ran it at
// 13.7 us, 5 TFLOP/s (bench/README.md). Here each block owns a 16-row x 32-column tile of Y, so
// 136 x 512 is 9 x 16 = 144 blocks: every SM busy, W read once per row tile (from L2 after the
// first), X once per column tile. The K dimension goes through shared memory 32 at a time; each
// of the 256 threads sums two outputs (rows r and r + 8 of its column) in ascending k with fmaf,
// four k of each operand per shared-memory load. A result does not depend on the schedule: graph
// replays and eager runs agree bit for bit, and so does the cluster rollout's product
// (engine/cuda/rollout_cluster.cu), which runs the same chains.
// The bf16 variant (--precision bf16) reads 2-byte operands, widens them exactly into the same
// fp32 tiles and sums the same way: half the bytes of W from L2.
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "kernels/matmul.h"
#include "core/vector_access.h"

namespace grpo {

namespace {

constexpr int kTileRows = 16, kTileCols = 32, kTileK = 32, kThreads = 256;

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(Bf16 x) { return to_float(x); }

template <class T>
__global__ void linear_forward_few_rows_kernel(const T* __restrict__ X, const T* __restrict__ W,
                                               const float* __restrict__ bias, float* __restrict__ Y, int M, int N,
                                               int K, const uint32_t* step) {
  if (step) {  // rows step*M.. of X and Y, the step read now (a graph loop's body)
    const size_t s = *step;
    X += s * size_t(M) * K;
    Y += s * size_t(M) * N;
  }
  // Rows of kTileK + 4 floats: 16-byte aligned, and the four-float reads ws[c][k..k+3] of a
  // warp's 32 columns fall on different banks within each quarter-warp (one wavefront each).
  __shared__ __align__(16) float xs[kTileRows][kTileK + 4];
  __shared__ __align__(16) float ws[kTileCols][kTileK + 4];
  const int row0 = blockIdx.y * kTileRows, col0 = blockIdx.x * kTileCols;
  const int tid = threadIdx.x, c = tid % kTileCols, r = tid / kTileCols;  // r in 0..7
  float acc0 = 0.f, acc1 = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    for (int i = tid; i < kTileRows * kTileK; i += kThreads) {
      const int gr = row0 + i / kTileK, gk = k0 + i % kTileK;
      xs[i / kTileK][i % kTileK] = gr < M && gk < K ? widen(X[size_t(gr) * K + gk]) : 0.f;
    }
    for (int i = tid; i < kTileCols * kTileK; i += kThreads) {
      const int gn = col0 + i / kTileK, gk = k0 + i % kTileK;
      ws[i / kTileK][i % kTileK] = gn < N && gk < K ? widen(W[size_t(gn) * K + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll 2
    for (int k = 0; k < kTileK; k += 4) {  // k ascending, one fmaf chain per output
      const float4 w = *vector_at<const float4>(&ws[c][k]);
      const float4 x0 = *vector_at<const float4>(&xs[r][k]);
      const float4 x1 = *vector_at<const float4>(&xs[r + 8][k]);
      acc0 = fmaf(x0.x, w.x, acc0), acc1 = fmaf(x1.x, w.x, acc1);
      acc0 = fmaf(x0.y, w.y, acc0), acc1 = fmaf(x1.y, w.y, acc1);
      acc0 = fmaf(x0.z, w.z, acc0), acc1 = fmaf(x1.z, w.z, acc1);
      acc0 = fmaf(x0.w, w.w, acc0), acc1 = fmaf(x1.w, w.w, acc1);
    }
    __syncthreads();
  }
  const int n = col0 + c;
  if (n >= N) return;
  const float b = bias ? bias[n] : 0.f;
  if (row0 + r < M) Y[size_t(row0 + r) * N + n] = acc0 + b;
  if (row0 + r + 8 < M) Y[size_t(row0 + r + 8) * N + n] = acc1 + b;
}

}  // namespace

bool linear_forward_takes_few_rows(int M, int N, int K, bool tf32) {
  return !tf32 && M >= 1 && M <= kFewRowsMax && N >= kTileCols && K >= kTileK;
}

namespace {
template <class T>
void few_rows(const T* X, const T* W, const float* bias, float* Y, int M, int N, int K, const uint32_t* step,
              cudaStream_t stream, const char* op) {
  check_linear_shape(M, N, K, op);
  if (M == 0) return;
  const dim3 grid(ceil_div(size_t(N), kTileCols), ceil_div(size_t(M), kTileRows));
  launch(linear_forward_few_rows_kernel<T>, grid, dim3(kThreads), 0, stream, X, W, bias, Y, M, N, K, step);
}
}  // namespace

void linear_forward_few_rows_cuda(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                                  cudaStream_t stream) {
  few_rows(X, W, bias, Y, M, N, K, nullptr, stream, "linear_forward_few_rows_cuda");
}

void linear_forward_few_rows_bf16_cuda(const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N, int K,
                                       cudaStream_t stream) {
  few_rows(X, W, bias, Y, M, N, K, nullptr, stream, "linear_forward_few_rows_bf16_cuda");
}

void linear_forward_few_rows_stepped_cuda(const float* X, const float* W, float* Y, int M, int N, int K,
                                          const uint32_t* step, cudaStream_t stream) {
  if (!step) throw std::invalid_argument("linear_forward_few_rows_stepped_cuda: no step counter");
  few_rows(X, W, static_cast<const float*>(nullptr), Y, M, N, K, step, stream, "linear_forward_few_rows_stepped_cuda");
}

void linear_forward_few_rows_stepped_bf16_cuda(const Bf16* X, const Bf16* W, float* Y, int M, int N, int K,
                                               const uint32_t* step, cudaStream_t stream) {
  if (!step) throw std::invalid_argument("linear_forward_few_rows_stepped_bf16_cuda: no step counter");
  few_rows(X, W, static_cast<const float*>(nullptr), Y, M, N, K, step, stream,
           "linear_forward_few_rows_stepped_bf16_cuda");
}

}  // namespace grpo
