// cuBLASLt shim: the matmul subset the engine calls (handle, fp32 matmul descriptor with
// transposes and pointer mode, column-major layouts (fp32, or bf16 A and B under plain fp32
// compute, summed in fp32 like fp32 operands), a preference with a workspace limit, the
// algorithm heuristic, an algorithm's configuration (read, and its K splits and reduction scheme
// set) and its check, cublasLtMatmul, the version). The algorithms and the
// heuristic are those of gemm_model.h: each algorithm sums in its own fp32 order, and the
// heuristic may answer differently while a stream captures, so only a caller that fixes its
// algorithm gets the same bits eagerly and in a graph. A (shape, algorithm) must have run once
// outside a capture before a capture may record it (cuBLASLt loads and sets a kernel up on first
// use). A matmul is a HostOp node on the given stream, deferred and captured like a kernel.
#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "simt/gemm_model.h"
#include "simt/runtime_internal.h"

using namespace simt::detail;

struct cublasLtContext {
  std::set<std::array<long long, 12>> met;  // (shape, algorithm, K splits) run outside a capture
};

namespace {

constexpr uint32_t kMagic = 0x51317e11u;

struct Desc {
  uint32_t magic;
  cublasComputeType_t compute;
  int32_t transa, transb, pointer_mode;
};
struct Layout {
  uint32_t magic;
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
struct Pref {
  uint32_t magic;
  uint64_t max_workspace;
  uint32_t align[4];  // minimum alignment in bytes of A, B, C, D the caller promises
};
struct Algo {
  uint32_t magic;
  int32_t id;
  uint32_t align[4];  // what the algorithm needs: the promise it was chosen under
  int32_t splits;     // CUBLASLT_ALGO_CONFIG_SPLITK_NUM; 0 (as the heuristic writes it) reads as 1
  uint32_t scheme;    // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME
};

// What an algorithm with its K splits needs beside it: with more than one, a reduction scheme,
// and workspace for the slices' sums (in the model, an fp32 m x n a split, whatever the scheme).
int splits_of(const Algo& al) { return std::max(al.splits, 1); }
size_t split_workspace(const Algo& al, const Gemm& g) {
  return splits_of(al) > 1 ? size_t(g.m) * size_t(g.n) * size_t(splits_of(al)) * sizeof(float) : 0;
}
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(Pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t));
static_assert(sizeof(Algo) <= sizeof(cublasLtMatmulAlgo_t));

// The shim's state lives inside the header's opaque structs.
template <class T, class O>
bool read(const O* o, T* out) {
  if (!o) return false;
  std::memcpy(out, o, sizeof(T));
  return out->magic == kMagic;
}
template <class T, class O>
void write(O* o, const T& v) {
  std::memset(o, 0, sizeof(O));
  std::memcpy(o, &v, sizeof(T));
}

void lt_node_identity() {}

bool op_ok(int32_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; }

// The product the descriptors describe (pointers left null), or a status.
cublasStatus_t shape_of(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, Desc* dd, Gemm* g) {
  Layout la, lb, lc, ld;
  if (!read(desc, dd) || !read(a, &la) || !read(b, &lb) || !read(c, &lc) || !read(d, &ld))
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool ta = dd->transa != CUBLAS_OP_N, tb = dd->transb != CUBLAS_OP_N;  // real data: C == T
  const uint64_t m = ld.rows, n = ld.cols, k = ta ? la.rows : la.cols;
  if ((ta ? la.cols : la.rows) != m || (tb ? lb.rows : lb.cols) != n || (tb ? lb.cols : lb.rows) != k || lc.rows != m ||
      lc.cols != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (lc.ld != ld.ld) return CUBLAS_STATUS_NOT_SUPPORTED;
  // fp32 everywhere, or bf16 A and B with fp32 C and D under CUBLAS_COMPUTE_32F.
  const bool bf16 = la.type == CUDA_R_16BF;
  if (la.type != lb.type || lc.type != CUDA_R_32F || ld.type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (bf16 && dd->compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return CUBLAS_STATUS_NOT_SUPPORTED;
  *g = Gemm{ta,      tb,         int(m),     int(n),     int(k), nullptr, nullptr, nullptr,
            nullptr, int(la.ld), int(lb.ld), int(ld.ld), 0,      0,       0,       1};
  g->bf16 = bf16;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

// The version of the headers the emulator was built with: the library it stands in for.
size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
  const bool compute_ok = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                          compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  if (!compute_ok || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;  // fp32 only
  *desc = new cublasLtMatmulDescOpaque_t;
  write(*desc, Desc{kMagic, compute, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_POINTER_MODE_HOST});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
  Desc d;
  if (!read(desc, &d) || !buf || bytes != sizeof(int32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t v;
  std::memcpy(&v, buf, sizeof v);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
      if (!op_ok(v)) return CUBLAS_STATUS_INVALID_VALUE;
      (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d.transa : d.transb) = v;
      break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      if (v != CUBLASLT_POINTER_MODE_HOST && v != CUBLASLT_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
      d.pointer_mode = v;
      break;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;  // not emulated
  }
  write(desc, d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
  if (type != CUDA_R_32F && type != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (ld < 1 || uint64_t(ld) < rows) return CUBLAS_STATUS_INVALID_VALUE;  // column-major: ld >= rows
  *layout = new cublasLtMatrixLayoutOpaque_t;
  write(*layout, Layout{kMagic, type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  write(*pref, Pref{kMagic, 0, {256, 256, 256, 256}});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  Pref p;
  if (!read(pref, &p) || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    if (bytes != sizeof(uint64_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p.max_workspace, buf, sizeof p.max_workspace);
  } else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
    if (bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&p.align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, sizeof(uint32_t));
  } else {
    return CUBLAS_STATUS_NOT_SUPPORTED;  // not emulated
  }
  write(pref, p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  Pref p;
  if (!read(pref, &p) || requested < 1 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
  Desc dd;
  Gemm g;
  if (cublasStatus_t s = shape_of(desc, a, b, c, d, &dd, &g)) return s;
  // Every algorithm needs each operand aligned to at least its element: a promise of less (an
  // fp32 C at 2 bytes, say) leaves the real library no answer, and it says so with this status.
  const uint32_t element[4] = {g.bf16 ? 2u : 4u, g.bf16 ? 2u : 4u, 4u, 4u};
  for (int i = 0; i < 4; ++i)
    if (p.align[i] < element[i]) return CUBLAS_STATUS_NOT_SUPPORTED;
  const int n = std::min(requested, kGemmAlgos);
  for (int r = 0; r < n; ++r) {
    std::memset(&results[r], 0, sizeof results[r]);
    write(&results[r].algo, Algo{kMagic,
                                 gemm_heuristic(g, any_capture(), r),
                                 {p.align[0], p.align[1], p.align[2], p.align[3]},
                                 1,
                                 CUBLASLT_REDUCTION_SCHEME_NONE});
    results[r].workspaceSize = 0;
    results[r].state = CUBLAS_STATUS_SUCCESS;
    results[r].wavesCount = 1.f;
  }
  *returned = n;
  return CUBLAS_STATUS_SUCCESS;
}

// An algorithm's K splits and their reduction scheme, the two settings the model takes; the
// others are not emulated.
cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf,
                                                    size_t bytes) {
  Algo al;
  if (!read(algo, &al) || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_ALGO_CONFIG_SPLITK_NUM) {
    int32_t v;
    if (bytes != sizeof v) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&v, buf, sizeof v);
    if (v < 1) return CUBLAS_STATUS_INVALID_VALUE;
    al.splits = v;
  } else if (attr == CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) {
    uint32_t v;
    if (bytes != sizeof v) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&v, buf, sizeof v);
    if (v != CUBLASLT_REDUCTION_SCHEME_NONE && v != CUBLASLT_REDUCTION_SCHEME_INPLACE &&
        v != CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE && v != CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
      return CUBLAS_STATUS_INVALID_VALUE;
    al.scheme = v;
  } else {
    return CUBLAS_STATUS_NOT_SUPPORTED;  // not emulated
  }
  write(algo, al);
  return CUBLAS_STATUS_SUCCESS;
}

// Whether the algorithm as configured runs the product: the model's algorithms take any K
// splits up to k, with a reduction scheme past one, and say the workspace they need.
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  Desc dd;
  Gemm g;
  Algo al;
  if (!algo || !result || !read(algo, &al) || al.id < 0 || al.id >= kGemmAlgos) return CUBLAS_STATUS_INVALID_VALUE;
  if (cublasStatus_t s = shape_of(desc, a, b, c, d, &dd, &g)) return s;
  if (splits_of(al) > std::max(g.k, 1) || (splits_of(al) > 1 && al.scheme == CUBLASLT_REDUCTION_SCHEME_NONE))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const cublasLtMatmulAlgo_t copy = *algo;  // algo may point to result->algo
  std::memset(result, 0, sizeof *result);
  result->algo = copy;
  result->workspaceSize = split_workspace(al, g);
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.f;
  return CUBLAS_STATUS_SUCCESS;
}

// The configuration of an algorithm the heuristic returned: its id is the model's algorithm; the
// model has no tiles or stages, so those read as cuBLASLt's defaults (undefined, 0).
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t bytes,
                                                    size_t* written) {
  Algo al;
  if (!read(algo, &al)) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t i32 = 0;
  uint32_t u32 = 0;
  const void* src = &u32;
  size_t size = sizeof u32;
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_ID:
      i32 = al.id, src = &i32, size = sizeof i32;
      break;
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM:
      i32 = splits_of(al), src = &i32, size = sizeof i32;
      break;
    case CUBLASLT_ALGO_CONFIG_TILE_ID:
    case CUBLASLT_ALGO_CONFIG_STAGES_ID:
      break;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;  // not emulated
  }
  if (bytes == 0) {
    if (!written) return CUBLAS_STATUS_INVALID_VALUE;
    *written = size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || bytes != size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, src, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta,
                              const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                              cudaStream_t stream) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!resolve(stream) || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  Desc dd;
  Gemm g;
  if (cublasStatus_t s = shape_of(desc, a, b, c, d, &dd, &g)) return s;
  const bool capturing = stream_is_capturing(stream);
  int id;
  if (algo) {
    Algo al;
    if (!read(algo, &al) || al.id < 0 || al.id >= kGemmAlgos) return CUBLAS_STATUS_INVALID_VALUE;
    const void* ptrs[4] = {A, B, C, D};
    for (int i = 0; i < 4; ++i)  // an operand less aligned than the algorithm was chosen for
      if (reinterpret_cast<uintptr_t>(ptrs[i]) % std::max<uint32_t>(al.align[i], 1) != 0)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    id = al.id;
    g.splits = splits_of(al);
    if (g.splits > 1 && al.scheme == CUBLASLT_REDUCTION_SCHEME_NONE) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (split_workspace(al, g) > workspace_bytes || (split_workspace(al, g) > 0 && !workspace))
      return CUBLAS_STATUS_NOT_SUPPORTED;  // the workspace cublasLtMatmulAlgoCheck said it needs
  } else {
    id = gemm_heuristic(g, capturing, 0);  // without an algorithm cuBLASLt asks its heuristic per call
  }
  if (g.m == 0 || g.n == 0) return CUBLAS_STATUS_SUCCESS;
  const std::array<long long, 12> key{g.ta, g.tb, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, dd.compute, id, g.bf16, g.splits};
  if (!capturing)
    h->met.insert(key);
  else if (!h->met.count(key))
    return CUBLAS_STATUS_NOT_SUPPORTED;  // first use inside a capture: warm up every shape eagerly
  g.A = A;
  g.B = B;
  g.Cin = static_cast<const float*>(C);
  g.C = static_cast<float*>(D);
  g.workspace = workspace;
  g.workspace_bytes = workspace_bytes;
  Node node(NodeKind::HostOp);
  node.func = reinterpret_cast<const void*>(&lt_node_identity);
  const float* fa = static_cast<const float*>(alpha);
  const float* fb = static_cast<const float*>(beta);
  if (dd.pointer_mode == CUBLASLT_POINTER_MODE_HOST) {  // host scalars are read now (baked into graphs)
    const float av = *fa, bv = *fb;
    node.op = [g, av, bv, id] { run_gemm(g, av, bv, id); };
  } else {
    node.op = [g, fa, fb, id] { run_gemm(g, *fa, *fb, id); };
  }
  return submit(std::move(node), stream) == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
