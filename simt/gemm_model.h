// The GEMM model shared by the cuBLAS and cuBLASLt shims (not included by user code). cuBLAS
// has many kernels for one product and they sum in different orders, so two algorithms give
// results that differ in the last bits. The shims model that: kGemmAlgos algorithms, each a
// fixed fp32 summation order, and a heuristic that ranks them per shape. Real heuristics give no
// promise that two queries agree (they depend on the library version, the device, workspace
// and internal state); the model answers differently while any stream captures, so code that
// asks per call runs different algorithms eagerly and inside a graph.
#pragma once
#include <cublas_v2.h>

namespace simt::detail {

// C = alpha op(A) op(B) + beta C, column-major, `batch` times with strides sa, sb, sc. A and B
// are fp32, or bf16 (16-bit words, the top half of an fp32) when bf16 is set.
struct Gemm {
  bool ta, tb;
  int m, n, k;
  const void *A, *B;
  const float* Cin;  // read when beta != 0 (cuBLASLt's C; cuBLAS's C, the same as the output)
  float* C;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  bool bf16 = false;
  void* workspace = nullptr;  // cuBLASLt's: the product writes it (its first bytes, for the checks)
  size_t workspace_bytes = 0;
  // cuBLASLt's K splits (CUBLASLT_ALGO_CONFIG_SPLITK_NUM): past 1, k in that many consecutive
  // slices of ceil(k / splits), each summed from its first term, the slices' sums added in order
  // (the algorithm's own order is not used).
  int splits = 1;
};

constexpr int kGemmAlgos = 4;
// Runs g with algorithm `algo` (0 <= algo < kGemmAlgos); C is not read when beta == 0. Its
// operands' spans, and its workspace, join the checks of races between streams first.
void run_gemm(const Gemm& g, float alpha, float beta, int algo);
// The heuristic's rank-th choice (rank 0 is the best) for the shape of g.
int gemm_heuristic(const Gemm& g, bool capturing, int rank);

}  // namespace simt::detail
