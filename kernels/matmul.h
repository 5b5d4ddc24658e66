// Matrix products of the policy network, one convention everywhere: row-major tensors and
// PyTorch's [out, in] weight layout. With X: [M, K] (M samples, K inputs), W: [N, K], Y: [M, N]:
//   linear_forward:          Y  = X W^T (+ bias[N] on every row when bias != nullptr)
//   linear_backward_input:   dX = dY W                        dX: [M, K]
//   linear_backward_weight:  dW = dY^T X, or dW += dY^T X when accumulate    dW: [N, K]
//   bias_grad:               db = column sums of dY           db: [N]  (overwritten)
// The host twins call OpenBLAS; the *_cuda launchers call cuBLASLt through a Blas context. fp32
// throughout; TF32 tensor cores only when the Blas context was created with Precision::Tf32.
// The *_bf16 variants take bf16 operands (kernels/bf16.h) and sum in fp32 into fp32 outputs:
// on the GPU bf16 tensor cores, in the host twins the operands widened (exactly) to fp32 and an
// fp32 sgemm, so the two differ only in summation order.
// Outputs must not alias inputs.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/activations_colsum.h"
#include "kernels/bf16.h"
#include "kernels/few_rows.h"
#include "kernels/precision.h"

#if defined(GRPO_HAVE_CUDA)
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/cuda_resources.h"
#endif

namespace grpo {

void linear_forward_host(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K);
void linear_backward_input_host(const float* dY, const float* W, float* dX, int M, int N, int K);
void linear_backward_weight_host(const float* dY, const float* X, float* dW, int M, int N, int K, bool accumulate);

// Scratch floats bias_grad needs (the same for host and cuda; host ignores it).
inline size_t bias_grad_scratch_floats(int M, int N) { return size_t(colsum::chunks(size_t(M))) * size_t(N); }
void bias_grad_host(const float* dY, float* db, int M, int N, float* scratch);
void linear_forward_bf16_host(const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N, int K);
void linear_backward_input_bf16_host(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K);
void linear_backward_weight_bf16_host(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K, bool accumulate);

// Throws std::invalid_argument unless M >= 0, N >= 1, K >= 1.
void check_linear_shape(int M, int N, int K, const char* op);

#if defined(GRPO_HAVE_CUDA)
// A product as Blas tells products apart: ta, tb, m, n, k, lda, ldb, ldc, the alignments in bytes
// (2 to 256) of A, B and C, each its own (an algorithm needs each operand at least as aligned as
// the preference it was chosen under, and no fp32 C can promise less than 4 bytes, whatever bf16
// A and B may), and whether A and B are bf16.
using GemmShape = std::array<int, 12>;

// One product's choice among cuBLASLt's answers: the heuristic's of rank `rank`, with K in
// `split` splits (0: the answer's own; Blas::split).
struct GemmAnswer {
  int rank = 0, split = 0;
  bool operator==(const GemmAnswer& o) const { return rank == o.rank && split == o.split; }
};

struct BlasOptions {
  BlasOptions() = default;
  explicit BlasOptions(Precision p, size_t workspace = size_t(32) << 20, int rank = 0)
      : precision(p), workspace_bytes(workspace), heuristic_rank(rank) {}
  // Tf32: the fp32 products in TF32 tensor-core math (relative error ~1e-3), opt in. Fp32 and
  // Bf16 run fp32 products in fp32; bf16 operands (gemm_bf16) are summed in fp32 whatever this is.
  Precision precision = Precision::Fp32;
  size_t workspace_bytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper
  // Which of cuBLASLt's heuristic answers each shape takes. The engine takes the first (0);
  // bench_gemm_algos_cuda times the others to measure what the first leaves on the table. A rank
  // the heuristic does not reach throws std::out_of_range at the shape's first use.
  int heuristic_rank = 0;
  // Per product, the answer to take instead of heuristic_rank and split_k: a tuning file's
  // choices (engine/cuda/gemm_tuning.h), timed on one device and cuBLASLt version and valid on
  // those. An answer the heuristic does not reach, or that does not take its split, gives the
  // product heuristic_rank's and split_k's, with a warning on stderr (it does not throw, as
  // heuristic_rank does).
  std::map<GemmShape, GemmAnswer> answers;
  // > 0: every product's answer run with K in this many splits (CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
  // with the first reduction scheme cuBLASLt's check accepts: in place, then in the compute type,
  // then in the output type, each a fixed order); a product whose answer does not take it, or
  // needs more workspace than workspace_bytes, throws std::out_of_range at its first use. 0: the
  // answer's own splits. bench_gemm_algos_cuda's survey of what splitting K would buy the
  // small-row products (the reference rollout's 544 rows fill few tiles); the engine takes 0.
  int split_k = 0;
};

// One cuBLASLt handle, the workspaces it owns (one per stream it has run a product on), and one
// fixed algorithm per product shape. cuBLASLt never allocates on its own; every matmul gets its
// stream's workspace, which the stream's first product allocates: that one must be eager. The algorithm of each (shape,
// transposes) is chosen once, by cuBLASLt's heuristic (its answer of rank options.heuristic_rank) at the shape's first
// use, which must be eager (a warm-up before any capture; a first use inside a capture throws),
// and reused by every later call, eager or captured: heuristic answers are not promised to agree
// from one query to the next, and algorithms sum in different orders, so a graph matches eager
// runs bit for bit only this way.
// Host pointer mode: alpha and beta are constants baked into a captured graph. Not thread-safe;
// one per stream user.
class Blas {
 public:
  explicit Blas(BlasOptions options = {});
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  Precision precision() const { return options_.precision; }
  bool tf32() const { return options_.precision == Precision::Tf32; }
  // Column-major C[m, n] = op(A) op(B), or C += op(A) op(B) when accumulate, on `stream`;
  // A is lda-strided [m, k] (or [k, m] when ta), B is ldb-strided [k, n] (or [n, k] when tb).
  void gemm(bool ta, bool tb, int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
            bool accumulate, cudaStream_t stream);
  // The same with bf16 A and B (CUDA_R_16BF), fp32 C, fp32 accumulation.
  void gemm_bf16(bool ta, bool tb, int m, int n, int k, const Bf16* A, int lda, const Bf16* B, int ldb, float* C,
                 int ldc, bool accumulate, cudaStream_t stream);
  // The configuration of the algorithm the last product ran with, for the benchmark that
  // compares the heuristic's answers (bench_gemm_algos_cuda). Throws std::logic_error before any.
  struct AlgoConfig {
    int id, tile, split_k, stages;  // cuBLASLt's algorithm id, tile id, K splits, stages id
  };
  AlgoConfig last_algorithm() const;

  // Each product run so far, timed at each of the heuristic's first `ranks` answers on the
  // operands of its last call, which must still be allocated (CUDA events, L2 flushed before
  // each call, the median of `repeats`): us[r] in microseconds, NaN past the answers the
  // heuristic has. The products overwrite (or, where they accumulate, add to) their outputs
  // again and again: what the caller computed there is gone. Eager only; for `grpo tune-gemm`.
  // With `splits`, rank 0's answer is also timed with K in splits[i] splits: split_us[i], NaN
  // where the answer does not take them.
  struct RankTimes {
    GemmShape shape;
    std::vector<float> us;
    std::vector<int> splits = {};
    std::vector<float> split_us = {};
  };
  std::vector<RankTimes> time_ranks(int ranks, int repeats, cudaStream_t stream, const std::vector<int>& splits = {});

 private:
  using Shape = GemmShape;
  void run(const Shape& s, const void* A, const void* B, float* C, bool accumulate, cudaStream_t stream);
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    const void* last_a = nullptr;  // the operands of the last call (time_ranks)
    const void* last_b = nullptr;
    float* last_c = nullptr;
    bool last_accumulate = false;
  };
  Plan& plan(const Shape& s, cudaStream_t stream);
  // The descriptors of shape s with the heuristic's answer of rank `rank` >= 0 (the constructor
  // checks every rank it is given; std::out_of_range where the heuristic has none); the caller
  // destroys them (destroy_plan).
  // The answer of rank `rank`, with K in `splits` splits where splits > 0.
  Plan make_plan(const Shape& s, int rank, int splits);
  // p's answer with K in `splits` splits (BlasOptions::split_k); `what` names the product.
  void split(Plan& p, int splits, const std::string& what);
  static void destroy_plan(Plan& p);

  BlasOptions options_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  // A workspace per stream, so that products on two streams may run at once: allocated at a
  // stream's first product, which must be eager (never by cuBLASLt, never inside a capture). It is
  // found by the stream's handle and, eagerly, checked against the stream's id (cudaStreamGetId,
  // which a GPU refuses inside a capture): a later stream may reuse a destroyed one's handle, never
  // its id. A reused handle's old workspace is retired, not freed, since a graph captured on the
  // old stream may still use it; it lives as long as the Blas. A reused handle whose first product
  // is captured is not told apart from the old stream (the id cannot be asked there): it gets the
  // old workspace, which is safe unless graphs of both streams run at once.
  struct Workspace {
    unsigned long long stream_id = 0;
    cuda::DeviceArray<std::byte> memory;
  };
  void* workspace(cudaStream_t stream);
  std::map<cudaStream_t, Workspace> workspaces_;
  std::vector<cuda::DeviceArray<std::byte>> retired_workspaces_;
  std::map<Shape, Plan> plans_;
  const Plan* last_ = nullptr;  // the plan of the last product run (map nodes do not move)
};

// linear_forward_cuda takes the few-row kernel (matmul_few_rows.cu) instead of cuBLASLt when
// linear_forward_takes_few_rows (kernels/few_rows.h). linear_forward_bf16_cuda takes its bf16
// variant by the same rule.
void linear_forward_cuda(Blas& blas, const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                         cudaStream_t stream);
// The few-row kernel itself (any shape check_linear_shape accepts; tests call it directly).
void linear_forward_few_rows_cuda(const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                                  cudaStream_t stream);
// The same on bf16 operands; linear_forward_bf16_cuda takes it where linear_forward_takes_few_rows
// says for fp32 (the small preset's rollout product under --precision bf16).
void linear_forward_few_rows_bf16_cuda(const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N, int K,
                                       cudaStream_t stream);
// Both without bias, on rows s*M.. of X and Y where s = *step is read on the device when the
// kernel runs, and nothing at all where s >= steps: nodes in the body of a graph's loop serve
// every step of the rollout (engine/cuda/rollout_loop_cuda.cpp). Same sums, so the same bits as
// the unstepped kernel.
void linear_forward_few_rows_stepped_cuda(const float* X, const float* W, float* Y, int M, int N, int K,
                                          const uint32_t* step, uint32_t steps, cudaStream_t stream);
void linear_forward_few_rows_stepped_bf16_cuda(const Bf16* X, const Bf16* W, float* Y, int M, int N, int K,
                                               const uint32_t* step, uint32_t steps, cudaStream_t stream);
void linear_backward_input_cuda(Blas& blas, const float* dY, const float* W, float* dX, int M, int N, int K,
                                cudaStream_t stream);
void linear_backward_weight_cuda(Blas& blas, const float* dY, const float* X, float* dW, int M, int N, int K,
                                 bool accumulate, cudaStream_t stream);
void bias_grad_cuda(const float* dY, float* db, int M, int N, float* scratch, cudaStream_t stream);
void linear_forward_bf16_cuda(Blas& blas, const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N,
                              int K, cudaStream_t stream);
void linear_backward_input_bf16_cuda(Blas& blas, const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K,
                                     cudaStream_t stream);
void linear_backward_weight_bf16_cuda(Blas& blas, const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                      bool accumulate, cudaStream_t stream);
#endif

}  // namespace grpo
