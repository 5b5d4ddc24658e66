// AVX-512 paths of the host products where OpenBLAS's packing costs more than the arithmetic:
// a handful of outputs (the 3-wide policy head) or of inputs (fc_in, K = 1 + 3 Fmax = 10).
// Explicit FMA intrinsics; each output sums in a fixed order set by the shape alone, so the bits
// never depend on the thread count (they may differ from the OpenBLAS or SSE2 fallbacks, which
// are CPU-dependent anyway). Every function returns false, having done nothing, when the CPU
// has no AVX-512 (or GRPO_HOST_ISA caps it): the caller then takes its general path.
#pragma once

namespace grpo::avx512mm {

// Y[M,N] = X[M,K] W[N,K]^T (+ bias) for N < 16: per row, N dot products of length K.
bool forward_few_outputs(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K);

// The same for K < 16: per row, K broadcasts times rows of W^T (transposed once per call).
bool forward_few_inputs(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K);

// Wt[K, N] = W[N, K]^T (plain C++, any CPU): the layout the few-inputs paths read.
void transpose(const float* W, int N, int K, float* Wt);

// Rows [r0, r1) of forward_few_inputs without bias, on the calling thread, from Wt = W^T [K, N]
// transposed once by the caller (the host rollout reuses it for 200 steps).
bool forward_few_inputs_rows(const float* X, const float* Wt, float* Y, int r0, int r1, int N, int K);

// dW[N,K] (+)= dY[M,N]^T X[M,K] for K < 16: partial sums over fixed 512-row slices of the M
// rows (in parallel), then the slices added in order.
bool weight_grad_few_inputs(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate);

// Pt[K, N] += dY[M, N]^T X[M, K] transposed (K < 16), on the calling thread: the building block
// of a fused backward that adds a few rows at a time into its own partial.
bool add_weight_grad_transposed(const float* dY, const float* X, float* Pt, int M, int N, int K);

}  // namespace grpo::avx512mm
