// cuBLAS shim: the GEMM entry points the engine calls, with cuBLAS's column-major semantics and
// argument checks. A GEMM is a HostOp node submitted to the handle's stream, so it runs
// deferred like a kernel and is captured into graphs. Each call runs the algorithm the
// heuristic of gemm_model.h picks for it at that call, as cuBLAS does; every algorithm sums in
// fp32 in its own order (TF32 compute is treated as fp32). C is never read when beta == 0. A
// shape must have run once outside a capture before a capture may record it.
#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "simt/gemm_model.h"
#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"

using namespace simt::detail;

struct cublasContext {
  cudaStream_t stream = nullptr;
  bool user_workspace = false;  // cublasSetStream resets it, as real cuBLAS does
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  // GEMM shapes this handle has run outside a capture. cuBLAS sets a shape up lazily on its
  // first call (kernel choice, module loading), which a capture cannot record.
  std::set<std::array<long long, 10>> shapes_met;
};

namespace simt::detail {

namespace {
// Element i of an fp32 or bf16 operand, as the fp32 it is (a bf16 widens exactly).
float element(const void* p, bool bf16, size_t i) {
  if (!bf16) return static_cast<const float*>(p)[i];
  const uint32_t bits = uint32_t(static_cast<const uint16_t*>(p)[i]) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
}  // namespace

namespace {
// The bytes from a column-major operand's first element to its last, over the batch.
size_t span(int rows, int cols, int ld, long long stride, int batch, size_t width) {
  if (rows == 0 || cols == 0 || batch == 0) return 0;
  return (size_t(batch - 1) * size_t(stride) + size_t(cols - 1) * size_t(ld) + size_t(rows)) * width;
}
}  // namespace

void run_gemm(const Gemm& g, float alpha, float beta, int algo) {
  const size_t width = g.bf16 ? 2 : 4;
  // A workspace is scratch the product writes from its start; a race over it shows in its first
  // bytes, and checking all of it (cuBLASLt's 32 MiB) would cost more than the product.
  san_host_op({{g.A, g.ta ? span(g.k, g.m, g.lda, g.sa, g.batch, width) : span(g.m, g.k, g.lda, g.sa, g.batch, width)},
               {g.B, g.tb ? span(g.n, g.k, g.ldb, g.sb, g.batch, width) : span(g.k, g.n, g.ldb, g.sb, g.batch, width)},
               {beta != 0.f ? g.Cin : nullptr, span(g.m, g.n, g.ldc, g.sc, g.batch, 4)}},
              {{g.C, span(g.m, g.n, g.ldc, g.sc, g.batch, 4)}, {g.workspace, std::min<size_t>(g.workspace_bytes, 256)}},
              "a cuBLAS product");
  for (int b = 0; b < g.batch; ++b) {
    const void* A = static_cast<const char*>(g.A) + b * g.sa * width;
    const void* B = static_cast<const char*>(g.B) + b * g.sb * width;
    const float* Cin = g.Cin + b * g.sc;
    float* C = g.C + b * g.sc;
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        auto term = [&](int l) {
          const float a = element(A, g.bf16, g.ta ? l + size_t(i) * g.lda : i + size_t(l) * g.lda);
          const float bb = element(B, g.bf16, g.tb ? j + size_t(l) * g.ldb : l + size_t(j) * g.ldb);
          return a * bb;
        };
        float acc = 0.f;
        if (alpha != 0.f && g.splits > 1) {
          const int slice = (g.k + g.splits - 1) / g.splits;
          for (int l0 = 0; l0 < g.k; l0 += slice) {
            float part = 0.f;
            for (int l = l0; l < std::min(g.k, l0 + slice); ++l) part += term(l);
            acc += part;
          }
        } else if (alpha != 0.f) {
          switch (algo) {
            case 0:
              for (int l = 0; l < g.k; ++l) acc += term(l);
              break;
            case 1:
              for (int l = g.k - 1; l >= 0; --l) acc += term(l);
              break;
            case 2: {  // split-K in two halves
              float lo = 0.f, hi = 0.f;
              for (int l = 0; l < g.k / 2; ++l) lo += term(l);
              for (int l = g.k / 2; l < g.k; ++l) hi += term(l);
              acc = lo + hi;
              break;
            }
            default: {  // four interleaved accumulators
              float p[4] = {0.f, 0.f, 0.f, 0.f};
              for (int l = 0; l < g.k; ++l) p[l % 4] += term(l);
              acc = (p[0] + p[1]) + (p[2] + p[3]);
              break;
            }
          }
        }
        const float prior = beta == 0.f ? 0.f : beta * Cin[i + size_t(j) * g.ldc];  // beta == 0: C is not read
        C[i + size_t(j) * g.ldc] = alpha * acc + prior;
      }
  }
}

int gemm_heuristic(const Gemm& g, bool capturing, int rank) {
  const unsigned long long h =
      (((g.ta * 2ull + g.tb) * 1000003ull + unsigned(g.m)) * 1000003ull + unsigned(g.n)) * 1000003ull + unsigned(g.k);
  const int best = int((h >> 7) % kGemmAlgos);
  return (best + (capturing ? 1 : 0) + rank) % kGemmAlgos;
}

}  // namespace simt::detail

namespace {

// Identity of the GEMM "kernel" for graph exec update (same function on both sides).
void gemm_node_identity() {}

cublasStatus_t submit_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, long long sa, const float* B, int ldb,
                           long long sb, const float* beta, float* C, int ldc, long long sc, int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto op_ok = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; };
  if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const bool trans_a = ta != CUBLAS_OP_N, trans_b = tb != CUBLAS_OP_N;  // real data: C == T
  const int rows_a = trans_a ? k : m, rows_b = trans_b ? n : k;
  if (lda < std::max(1, rows_a) || ldb < std::max(1, rows_b) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  // Without a user workspace, a GEMM inside a capture may allocate: unsafe (docs/notes/cuda-graphs.md).
  if (stream_is_capturing(h->stream) && !h->user_workspace) return CUBLAS_STATUS_NOT_SUPPORTED;
  // A shape first met inside a capture: refused (docs/notes/cuda-graphs.md: warm up every shape).
  const std::array<long long, 10> shape{trans_a, trans_b, m, n, k, lda, ldb, ldc, batch, h->math};
  if (!stream_is_capturing(h->stream))
    h->shapes_met.insert(shape);
  else if (!h->shapes_met.count(shape))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const Gemm g{trans_a, trans_b, m, n, k, A, B, C, C, lda, ldb, ldc, sa, sb, sc, batch};
  const int algo = gemm_heuristic(g, stream_is_capturing(h->stream), 0);  // chosen per call
  Node node(NodeKind::HostOp);
  node.func = reinterpret_cast<const void*>(&gemm_node_identity);
  if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST) {  // host scalars are read now (baked into graphs)
    const float a = *alpha, b = *beta;
    node.op = [g, a, b, algo] { run_gemm(g, a, b, algo); };
  } else {  // device scalars are read at execution
    node.op = [g, alpha, beta, algo] { run_gemm(g, *alpha, *beta, algo); };
  }
  return submit(std::move(node), h->stream) == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

bool fp32_gemm_types(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t compute) {
  const bool compute_ok = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                          compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  return a == CUDA_R_32F && b == CUDA_R_32F && c == CUDA_R_32F && compute_ok;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  h->user_workspace = false;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* ws, size_t bytes) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ok = true;
  if (bytes > 0 && (!ws || classify(ws, bytes, &ok) != MemKind::Device || !ok)) return CUBLAS_STATUS_INVALID_VALUE;
  h->user_workspace = true;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = h->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  h->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t* mode) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = h->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  return submit_gemm(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                         long long sc, int batch) {
  return submit_gemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  if (!fp32_gemm_types(at, bt, ct, compute)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return submit_gemm(h, ta, tb, m, n, k, static_cast<const float*>(alpha), static_cast<const float*>(A), lda, 0,
                     static_cast<const float*>(B), ldb, 0, static_cast<const float*>(beta), static_cast<float*>(C), ldc,
                     0, 1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void* alpha, const void* A, cudaDataType at, int lda,
                                          long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
                                          const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (!fp32_gemm_types(at, bt, ct, compute)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return submit_gemm(h, ta, tb, m, n, k, static_cast<const float*>(alpha), static_cast<const float*>(A), lda, sa,
                     static_cast<const float*>(B), ldb, sb, static_cast<const float*>(beta), static_cast<float*>(C),
                     ldc, sc, batch);
}
