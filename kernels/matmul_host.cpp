// Host twins of matmul.cu: OpenBLAS sgemm in row-major mode, so the calls read like the maths.
// Threading (bench/README.md, "host executor"): OpenBLAS runs single-threaded and the products
// are split over OpenMP threads in fixed tiles of the output, so there is one thread pool
// (OpenBLAS's pthreads and OpenMP's spinning workers fight over a small machine's cores) and
// every element is one sgemm's dot product, whatever the thread count.
// Small products (the rollout's 136-row steps) run on the calling thread: a fork/join costs more.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <cblas.h>

#include "kernels/matmul.h"
#include "cpu/matmul_avx512.h"
#include "cpu/parallel.h"

namespace grpo {

namespace {

// Output rows per parallel task of a tall product, and output columns per task of a short one.
// Each task packs the whole of the other operand, so tiles are large: 64-row tiles would repack
// the loss pass's 27,200 x 512 activations 8 times in dW = dY^T X. The rollout's 136 x 512 x 512
// product splits into two 256-column tiles, one per thread of a two-core machine; one 512-column
// tile would leave the second thread idle (bench/README.md has the measurements).
constexpr int kRowTile = 256;
constexpr int kColTile = 256;
constexpr int kSplitInner = 8192;  // a single-tile product summing over at least this many...
constexpr int kInnerParts = 4;     // ...is split into this many fixed slices of the sum

// OpenBLAS's own threads off, once, before the first product.
void single_threaded_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// C[rows, cols] (ldc) = op(A) op(B) + beta C on OpenMP threads, in fixed tiles of C. A's row r
// is at A + r * a_row_stride (NoTrans: lda; Trans: 1). B's column block c starts at
// B + c * b_col_stride (Trans: ldb, a row of the stored matrix; NoTrans: 1). Tall products
// (the loss pass) split C's rows; short ones (the rollout's 136 rows) split its columns, so each
// thread packs only its share of the weights (row tiles left one thread idle there).
void gemm_tiles(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int rows, int cols, int inner, const float* A, int lda,
                size_t a_row_stride, const float* B, int ldb, size_t b_col_stride, float beta, float* C, int ldc) {
  single_threaded_blas();
  if (hostpar::in_chunk()) {
    // Already one task of a parallel region (the loss pass runs dW and dX side by side): one
    // call, so OpenBLAS packs each operand once.
    cblas_sgemm(CblasRowMajor, ta, tb, rows, cols, inner, 1.f, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const bool by_rows = rows >= 256 || rows >= cols;
  const int extent = by_rows ? rows : cols, tile = by_rows ? kRowTile : kColTile;
  const int tiles = (extent + tile - 1) / tile;
  if (tiles < 2 && inner >= kSplitInner && 2.0 * rows * cols * inner >= hostpar::kParallelFlops) {
    // A small output over a long sum (dW at hidden 64: 64 x 64 over 27,200 rows) has one tile;
    // split the sum into kInnerParts fixed slices instead, each into its own partial in this
    // thread's buffer (grown once, never per call), then add the partials in slice order. The
    // slices depend on the shape only, so the bits do not depend on the thread count.
    const int part = (inner + kInnerParts - 1) / kInnerParts;
    const size_t plane = size_t(rows) * cols;
    thread_local std::vector<float> partials;
    if (partials.size() < kInnerParts * plane) partials.resize(kInnerParts * plane);
    float* buf = partials.data();
    hostpar::parallel_for(kInnerParts, [&](int p) {
      const int k0 = std::min(inner, p * part), kn = std::min(part, inner - k0);
      float* out = buf + size_t(p) * plane;
      if (kn <= 0) {
        std::fill(out, out + plane, 0.f);
        return;
      }
      const float* a = A + (ta == CblasNoTrans ? size_t(k0) : size_t(k0) * lda);
      const float* b = B + (tb == CblasNoTrans ? size_t(k0) * ldb : size_t(k0));
      cblas_sgemm(CblasRowMajor, ta, tb, rows, cols, kn, 1.f, a, lda, b, ldb, 0.f, out, cols);
    });
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        float acc = beta == 0.f ? 0.f : beta * C[size_t(r) * ldc + c];
        for (int p = 0; p < kInnerParts; ++p) acc += buf[size_t(p) * plane + size_t(r) * cols + c];
        C[size_t(r) * ldc + c] = acc;
      }
    return;
  }
  const bool parallel = 2.0 * rows * cols * inner >= hostpar::kParallelFlops && tiles > 1;
  auto tile_fn = [&](int t) {
    const int s0 = t * tile, n = std::min(tile, extent - s0);
    if (by_rows)
      cblas_sgemm(CblasRowMajor, ta, tb, n, cols, inner, 1.f, A + s0 * a_row_stride, lda, B, ldb, beta,
                  C + size_t(s0) * ldc, ldc);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, rows, n, inner, 1.f, A, lda, B + s0 * b_col_stride, ldb, beta, C + s0, ldc);
  };
  if (parallel)
    hostpar::parallel_for(tiles, tile_fn);
  else
    for (int t = 0; t < tiles; ++t) tile_fn(t);
}

}  // namespace

void check_linear_shape(int M, int N, int K, const char* op) {
  if (M < 0 || N < 1 || K < 1)
    throw std::invalid_argument(std::string(op) + ": need M >= 0, N >= 1, K >= 1, got M = " + std::to_string(M) +
                                ", N = " + std::to_string(N) + ", K = " + std::to_string(K));
}

void linear_forward_host(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_forward_host");
  if (M == 0) return;
  if (avx512mm::forward_few_outputs(X, W, bias, Y, M, N, K)) return;
  if (avx512mm::forward_few_inputs(X, W, bias, Y, M, N, K)) return;
  if (N < 16) {
    // The 3-wide policy head: sgemm's packing costs more than these dot products.
    const double parallel_rows = hostpar::kParallelFlops / (double(N) * K);  // rows below which one thread does it all
    hostpar::for_row_ranges(M, 1, parallel_rows, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) {
        const float* x = X + size_t(r) * K;
        for (int c = 0; c < N; ++c) {
          const float* w = W + size_t(c) * K;
          float s = 0.f;
#pragma omp simd reduction(+ : s)
          for (int k = 0; k < K; ++k) s += x[k] * w[k];
          Y[size_t(r) * N + c] = bias ? s + bias[c] : s;
        }
      }
    });
    return;
  }
  gemm_tiles(CblasNoTrans, CblasTrans, M, N, K, X, K, size_t(K), W, K, size_t(K), 0.f, Y, N);
  if (bias == nullptr) return;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) Y[size_t(r) * N + c] += bias[c];
}

void linear_backward_input_host(const float* dY, const float* W, float* dX, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_backward_input_host");
  if (M == 0) return;
  gemm_tiles(CblasNoTrans, CblasNoTrans, M, K, N, dY, N, size_t(N), W, K, 1, 0.f, dX, K);
}

void linear_backward_weight_host(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate) {
  check_linear_shape(M, N, K, "linear_backward_weight_host");
  if (M == 0) {  // an empty sum: dW = 0, or unchanged when accumulating
    if (!accumulate) std::fill(dW, dW + size_t(N) * K, 0.f);
    return;
  }
  if (avx512mm::weight_grad_few_inputs(dY, X, dW, M, N, K, accumulate)) return;
  // dW's rows are dY's columns: row r of op(A) = dY^T starts at dY + r.
  gemm_tiles(CblasTrans, CblasNoTrans, N, K, M, dY, N, 1, X, K, 1, accumulate ? 1.f : 0.f, dW, K);
}

void bias_grad_host(const float* dY, float* db, int M, int N, float* /*scratch*/) {
  if (M < 0 || N < 0) throw std::invalid_argument("bias_grad_host: negative shape");
  const int blocks = (N + 15) / 16;
  auto block = [&](int b) {
    double s[16] = {};
    const int c0 = 16 * b, c1 = std::min(N, c0 + 16);
    for (int r = 0; r < M; ++r)
      for (int c = c0; c < c1; ++c) s[c - c0] += dY[size_t(r) * N + c];
    for (int c = c0; c < c1; ++c) db[c] = float(s[c - c0]);
  };
  if (double(M) * N >= 1 << 18)
    hostpar::parallel_for(blocks, block);
  else
    for (int b = 0; b < blocks; ++b) block(b);
}

}  // namespace grpo
