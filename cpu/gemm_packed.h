// Products against a weight matrix packed once and reused: at the small preset fc1.weight
// (512 x 512) is the B operand of the rollout's 200 products, and OpenBLAS repacked it on every
// call, a large share of the host epoch. Packed, an AVX-512 kernel streams 32-column panels of
// B while 8 rows of A are broadcast from L1 with 16 FMA accumulators, faster than OpenBLAS on
// the rollout's 136 x 512 x 512 (bench/README.md has the figures).
// Each output is one sequential FMA chain over the inner index, so the bits depend only on the
// shape, never on the thread count. Without AVX-512 (or with GRPO_HOST_ISA capping it) pack()
// leaves the matrix empty and gemm() returns false: callers then take the OpenBLAS path.
#pragma once
#include <cstddef>
#include <vector>

namespace grpo::packed {

// B[inner, cols] in panels of 32 columns, panel p = B[:, 32p .. 32p + 32) row after row, zero
// padded past cols.
struct PackedB {
  std::vector<float> storage;  // panels start at a 64-byte boundary inside it (whole-line loads)
  float* panels = nullptr;
  int inner = 0, cols = 0;
  const float* source = nullptr;  // the weight matrix it was packed from (identity, not contents)
  bool ready() const { return panels != nullptr; }
};

// W is [N, K] (PyTorch's [out, in]). For linear_forward (Y = X W^T): B = W^T, inner K, cols N.
void pack_transposed(const float* W, int N, int K, PackedB& out);

// Y[M, cols] = A[M, inner] B (+ bias[cols]) on the pool; false (nothing done) when B is not packed.
bool gemm(const float* A, int M, const PackedB& B, const float* bias, float* Y);

}  // namespace grpo::packed
