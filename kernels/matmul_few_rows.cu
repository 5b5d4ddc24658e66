// Y = X W^T (+ bias) for products with few rows: the rollout's fc1 at the small preset (136 x 512
// x 512) gives cuBLASLt's fp32 tiles a handful of thread blocks on 132 SMs (5 TFLOP/s on an
// H100). Here each block owns a 16-row x 32-column tile of Y, so 136 x 512 is 9 x 16 = 144
// blocks: every SM busy, W read once per row tile (from L2 after the first), X once per column
// tile. K goes through shared memory 128 at a time, and each thread loads its share of the next
// 128 into registers before it sums the current one: with about one block an SM nothing else
// hides a load's L2 round trip, so only the first is waited for. Each of the 256 threads sums two
// outputs (rows r and r + 8 of its column): in each tile of K, one fmaf chain in ascending k, four
// k of each operand per shared-memory load; the tiles' sums added to 0 in order (kFewRowsSumTile). A
// result does not depend on the schedule: graph replays and eager runs agree bit for bit, and so
// does the cluster rollout's product (engine/cuda/rollout_cluster.cu), which sums the same way.
// The bf16 variant (--precision bf16) reads 2-byte operands, widens them exactly into the same
// fp32 tiles and sums the same way: half the bytes of W from L2.
// Launched overlapped (core/launch.h), in a graph loop's body too: it waits for the kernel before
// it first thing, then lets the next one start, so that one's launch hides behind this one.
#include <stdexcept>
#include <string>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/matmul.h"
#include "core/vector_access.h"

namespace grpo {

namespace {

constexpr int kTileRows = 16, kTileCols = 32, kTileK = 128, kThreads = 256;
// One thread's share of a K tile: kXLoads of X's and kWLoads of W's elements.
constexpr int kXLoads = kTileRows * kTileK / kThreads, kWLoads = kTileCols * kTileK / kThreads;
static_assert(kTileRows * kTileK % kThreads == 0 && kTileCols * kTileK % kThreads == 0, "whole shares");
static_assert(kFewRowsMinCols == kTileCols, "linear_forward_takes_few_rows asks for a whole tile of columns");
static_assert(kTileK == kFewRowsSumTile, "a shared-memory tile of K is a tile of the documented sum");

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(Bf16 x) { return to_float(x); }

// Two blocks an SM (at most 128 registers): the small rollout's 144 blocks in one wave.
template <class T>
__global__ void __launch_bounds__(kThreads, 2)
    linear_forward_few_rows_kernel(const T* __restrict__ X, const T* __restrict__ W, const float* __restrict__ bias,
                                   float* __restrict__ Y, int M, int N, int K, const uint32_t* step, uint32_t steps) {
  wait_for_previous_kernel();
  release_next_kernel();
  if (step) {  // rows step*M.. of X and Y, the step read now (a graph loop's body), if it is one
    const size_t s = *step;
    if (s >= steps) return;
    X += s * size_t(M) * K;
    Y += s * size_t(M) * N;
  }
  // Rows of kTileK + 4 floats: 16-byte aligned, and the four-float reads ws[c][k..k+3] of a
  // warp's 32 columns fall on different banks within each quarter-warp (one wavefront each).
  __shared__ __align__(16) float xs[kTileRows][kTileK + 4];
  __shared__ __align__(16) float ws[kTileCols][kTileK + 4];
  const int row0 = blockIdx.y * kTileRows, col0 = blockIdx.x * kTileCols;
  const int tid = threadIdx.x, c = tid % kTileCols, r = tid / kTileCols;  // r in 0..7
  // A thread loads k kk of rows rr, rr + kRowStep, ... of the tile: a warp's loads are 32
  // consecutive k of one row. Past M, N or K the tile holds zeros.
  constexpr int kRowStep = kThreads / kTileK;
  const int kk = tid % kTileK, rr = tid / kTileK;
  float xr[kXLoads], wr[kWLoads];
  const auto fetch = [&](int k0) {
    const int gk = k0 + kk;
    const bool in_k = gk < K;
#pragma unroll
    for (int j = 0; j < kXLoads; ++j) {
      const int gr = row0 + rr + j * kRowStep;
      xr[j] = in_k && gr < M ? widen(X[size_t(gr) * K + gk]) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < kWLoads; ++j) {
      const int gn = col0 + rr + j * kRowStep;
      wr[j] = in_k && gn < N ? widen(W[size_t(gn) * K + gk]) : 0.f;
    }
  };
  float acc0 = 0.f, acc1 = 0.f;
  fetch(0);
  for (int k0 = 0; k0 < K; k0 += kTileK) {
#pragma unroll
    for (int j = 0; j < kXLoads; ++j) xs[rr + j * kRowStep][kk] = xr[j];
#pragma unroll
    for (int j = 0; j < kWLoads; ++j) ws[rr + j * kRowStep][kk] = wr[j];
    __syncthreads();
    if (k0 + kTileK < K) fetch(k0 + kTileK);  // in flight while this tile is summed
    float p0 = 0.f, p1 = 0.f;                 // the tile's sums: k ascending, one fmaf chain per output
#pragma unroll 4
    for (int k = 0; k < kTileK; k += 4) {
      const float4 w = *vector_at<const float4>(&ws[c][k]);
      const float4 x0 = *vector_at<const float4>(&xs[r][k]);
      const float4 x1 = *vector_at<const float4>(&xs[r + 8][k]);
      p0 = fmaf(x0.x, w.x, p0), p1 = fmaf(x1.x, w.x, p1);
      p0 = fmaf(x0.y, w.y, p0), p1 = fmaf(x1.y, w.y, p1);
      p0 = fmaf(x0.z, w.z, p0), p1 = fmaf(x1.z, w.z, p1);
      p0 = fmaf(x0.w, w.w, p0), p1 = fmaf(x1.w, w.w, p1);
    }
    acc0 += p0, acc1 += p1;
    __syncthreads();
  }
  const int n = col0 + c;
  if (n >= N) return;
  const float b = bias ? bias[n] : 0.f;
  if (row0 + r < M) Y[size_t(row0 + r) * N + n] = acc0 + b;
  if (row0 + r + 8 < M) Y[size_t(row0 + r + 8) * N + n] = acc1 + b;
}

}  // namespace

namespace {
template <class T>
void few_rows(const T* X, const T* W, const float* bias, float* Y, int M, int N, int K, const uint32_t* step,
              uint32_t steps, cudaStream_t stream, const char* op) {
  check_linear_shape(M, N, K, op);
  if (M == 0) return;
  const dim3 grid(ceil_div(size_t(N), kTileCols), ceil_div(size_t(M), kTileRows));
  launch_overlapped(linear_forward_few_rows_kernel<T>, grid, dim3(kThreads), 0, stream, X, W, bias, Y, M, N, K, step,
                    steps);
}
}  // namespace

void linear_forward_few_rows_cuda(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                                  cudaStream_t stream) {
  few_rows(X, W, bias, Y, M, N, K, nullptr, 0, stream, "linear_forward_few_rows_cuda");
}

void linear_forward_few_rows_bf16_cuda(const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N, int K,
                                       cudaStream_t stream) {
  few_rows(X, W, bias, Y, M, N, K, nullptr, 0, stream, "linear_forward_few_rows_bf16_cuda");
}

void linear_forward_few_rows_stepped_cuda(const float* X, const float* W, float* Y, int M, int N, int K,
                                          const uint32_t* step, uint32_t steps, cudaStream_t stream) {
  if (!step) throw std::invalid_argument("linear_forward_few_rows_stepped_cuda: no step counter");
  few_rows(X, W, static_cast<const float*>(nullptr), Y, M, N, K, step, steps, stream,
           "linear_forward_few_rows_stepped_cuda");
}

void linear_forward_few_rows_stepped_bf16_cuda(const Bf16* X, const Bf16* W, float* Y, int M, int N, int K,
                                               const uint32_t* step, uint32_t steps, cudaStream_t stream) {
  if (!step) throw std::invalid_argument("linear_forward_few_rows_stepped_bf16_cuda: no step counter");
  few_rows(X, W, static_cast<const float*>(nullptr), Y, M, N, K, step, steps, stream,
           "linear_forward_few_rows_stepped_bf16_cuda");
}

}  // namespace grpo
