// Which products the few-row kernel (kernels/matmul_few_rows.cu) takes instead of cuBLASLt:
// fp32 or bf16 operands (no TF32), 1..kFewRowsMax rows, 32..kFewRowsMaxWidth outputs and inputs.
// That is the rollout's product with fc1 at the small preset (136 rows); the reference's 544 rows
// and the loss pass stay on cuBLASLt. Plain arithmetic, so that a configuration (engine/train_config.h)
// can ask it on a machine without CUDA; the kernel checks its tiles against these bounds.
#pragma once

namespace grpo {

constexpr int kFewRowsMax = 256;
constexpr int kFewRowsMinCols = 32;  // one tile of columns
constexpr int kFewRowsMinK = 32;     // the narrowest sum the cluster rollout's product matches bit for bit
// The widest N and K it takes. On the H200 it beat cuBLASLt at 136 x 512 x 512 (bench/README.md);
// at 136 x 2048 x 2048 (the reference's games on four rollout streams) a step took 529 us against
// 23.7 with one stream's 544 rows on cuBLASLt. Between the two it is untimed. 1024 keeps the cluster rollout's widest
// shapes (it follows this rule, to be the stepwise run bit for bit; in bf16 it fits up to ~768).
constexpr int kFewRowsMaxWidth = 1024;
// How the few-row products sum over k, which the cluster rollout's products repeat bit for bit: an
// fmaf chain from 0 over each tile of kFewRowsSumTile consecutive k (the last tile may be
// shorter), the tiles' sums added to 0 in ascending order. Independent chains, so that a tensor-core
// product can run four of them at once where one chain over all of k would wait on each step.
constexpr int kFewRowsSumTile = 128;

constexpr bool linear_forward_takes_few_rows(int M, int N, int K, bool tf32) {
  return !tf32 && M >= 1 && M <= kFewRowsMax && N >= kFewRowsMinCols && K >= kFewRowsMinK && N <= kFewRowsMaxWidth &&
         K <= kFewRowsMaxWidth;
}

}  // namespace grpo
