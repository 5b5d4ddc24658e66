// cuBLASLt wrapper for the row-major, [out, in]-weight convention of matmul.h, the bias add
// that follows the forward GEMM, and the deterministic bias gradient.
//
// cuBLASLt's default layout is column-major. A row-major [R, C] array is the column-major [C, R]
// array with the same memory, i.e. its transpose; so each row-major product is computed as its
// transpose (gemm(ta, tb, m, n, k, A, lda, B, ldb, C, ldc) below is column-major C = op(A) op(B)):
//   Y = X W^T    ->  Y^T[N,M]  = (W^T)^T[N,K] X^T[K,M]     gemm(T, N, N, M, K, W, K, X, K, Y, N)
//   dX = dY W    ->  dX^T[K,M] = W^T[K,N] dY^T[N,M]        gemm(N, N, K, M, N, W, K, dY, N, dX, K)
//   dW = dY^T X  ->  dW^T[K,N] = X^T[K,M] (dY^T)^T[M,N]    gemm(N, T, K, N, M, X, K, dY, N, dW, K)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/grid_dependency.cuh"
#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "core/launch.h"
#include "kernels/matmul.h"

namespace grpo {

Blas::Blas(BlasOptions options) : options_(options) {
  if (options_.heuristic_rank < 0) throw std::invalid_argument("Blas: heuristic_rank must be at least 0");
  if (options_.split_k < 0) throw std::invalid_argument("Blas: split_k must be at least 0");
  for (const auto& [shape, answer] : options_.answers)
    if (answer.rank < 0 || answer.split < 0)
      throw std::invalid_argument("Blas: a tuned answer's rank and split must be at least 0");
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  try {
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    const uint64_t ws = options_.workspace_bytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  } catch (...) {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtDestroy(handle_);
    throw;
  }
}

Blas::~Blas() {  // destructors do not throw: errors here are ignored
  for (auto& [shape, p] : plans_) destroy_plan(p);
  cublasLtMatmulPreferenceDestroy(pref_);
  cublasLtDestroy(handle_);
}

void Blas::destroy_plan(Plan& p) {
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p.a = p.b = p.c = nullptr;
  p.desc = nullptr;
}

Blas::Plan& Blas::plan(const Shape& s, cudaStream_t stream) {
  auto it = plans_.find(s);
  if (it != plans_.end()) return it->second;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    throw CudaError("Blas: first use of a GEMM shape inside a stream capture; run every shape eagerly first");
  const auto tuned = options_.answers.find(s);
  if (tuned != options_.answers.end()) {
    try {
      return plans_.emplace(s, make_plan(s, tuned->second.rank, tuned->second.split)).first->second;
    } catch (const std::out_of_range& e) {
      // A tuning file names answers the heuristic gave on this device and cuBLASLt version.
      // Should it give fewer now, the product takes the first rather than end the run: the same
      // choice on every run with this file here, so the bits stay reproducible.
      std::fprintf(stderr, "grpo: warning: %s, the tuned answer: taking the first\n", e.what());
    }
  }
  return plans_.emplace(s, make_plan(s, options_.heuristic_rank, options_.split_k)).first->second;
}

Blas::Plan Blas::make_plan(const Shape& s, int rank, int splits) {
  const auto [ta, tb, m, n, k, lda, ldb, ldc, align_a, align_b, align_c, bf16] = s;
  // bf16 operands sum in plain fp32 (CUBLAS_COMPUTE_32F is cuBLASLt's compute type for bf16 A
  // and B with an fp32 C); fp32 operands in TF32 only when asked.
  const cublasComputeType_t compute = !bf16 && tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t operand = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  Plan p;
  try {
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(align_a)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(align_b)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(align_c)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(align_c)}};  // D is C
    for (const auto& [attr, bytes] : aligns)
      CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, attr, &bytes, sizeof bytes));
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F));
    const int32_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    // Stored shapes (column-major rows x cols): A is op(A)'s transpose when ta, likewise B.
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, operand, ta ? k : m, ta ? m : k, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, operand, tb ? n : k, tb ? k : n, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, m, n, ldc));
    std::vector<cublasLtMatmulHeuristicResult_t> answers(size_t(rank) + 1);
    int found = 0;
    const std::string what = std::string(" for a ") + (bf16 ? "bf16 " : "") + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k) + " product (ld " + std::to_string(lda) +
                             ", " + std::to_string(ldb) + ", " + std::to_string(ldc) + "; operands aligned to " +
                             std::to_string(align_a) + ", " + std::to_string(align_b) + ", " + std::to_string(align_c) +
                             " bytes)";
    const cublasStatus_t asked =
        cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref_, rank + 1, answers.data(), &found);
    // The library says NOT_SUPPORTED when no algorithm serves the shape, types and alignments.
    if (asked == CUBLAS_STATUS_NOT_SUPPORTED) throw CudaError("cuBLASLt has no algorithm" + what);
    CUBLAS_CHECK(asked);
    // An answer may come back with a state of its own that is not success: only the usable ones
    // are ranked.
    const auto usable_end =
        std::remove_if(answers.begin(), answers.begin() + std::clamp(found, 0, rank + 1),
                       [](const cublasLtMatmulHeuristicResult_t& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
    const int usable = int(usable_end - answers.begin());
    if (usable < 1) throw CudaError("cuBLASLt has no algorithm" + what);
    if (usable <= rank)
      throw std::out_of_range("cuBLASLt's heuristic returned " + std::to_string(usable) + " usable answers" + what +
                              ", none at rank " + std::to_string(rank));
    p.algo = answers[size_t(rank)].algo;
    if (splits > 0) split(p, splits, what);
  } catch (...) {
    destroy_plan(p);
    throw;
  }
  return p;
}

// Whatever status the library gives (an answer that cannot split K may refuse the setting
// itself, not only the check), an answer that does not take the split is out of range, as an
// absent rank is: a survey or a tuning run goes on to the next.
void Blas::split(Plan& p, int splits, const std::string& what) {
  const int32_t k = splits;
  // Past one split, the first reduction scheme the check takes (each a fixed order of the sums).
  std::vector<uint32_t> schemes = {CUBLASLT_REDUCTION_SCHEME_NONE};
  if (splits > 1)
    schemes = {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
               CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
  if (cublasLtMatmulAlgoConfigSetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &k, sizeof k) !=
      CUBLAS_STATUS_SUCCESS)
    schemes.clear();
  for (const uint32_t scheme : schemes) {
    if (cublasLtMatmulAlgoConfigSetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme) !=
        CUBLAS_STATUS_SUCCESS)
      continue;
    cublasLtMatmulHeuristicResult_t checked{};
    if (cublasLtMatmulAlgoCheck(handle_, p.desc, p.a, p.b, p.c, p.c, &p.algo, &checked) == CUBLAS_STATUS_SUCCESS &&
        checked.state == CUBLAS_STATUS_SUCCESS && checked.workspaceSize <= options_.workspace_bytes)
      return;
  }
  throw std::out_of_range("cuBLASLt's answer does not take " + std::to_string(splits) + " splits of K" + what +
                          " within " + std::to_string(options_.workspace_bytes) + " bytes of workspace");
}

void* Blas::workspace(cudaStream_t stream) {
  if (options_.workspace_bytes == 0) return nullptr;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  auto it = workspaces_.find(stream);
  if (capturing != cudaStreamCaptureStatusNone) {
    if (it == workspaces_.end())
      throw CudaError("Blas: first product on a stream inside a stream capture; use the stream eagerly first");
    return it->second.memory.get();
  }
  unsigned long long id = 0;
  CUDA_CHECK(cudaStreamGetId(stream, &id));
  if (it != workspaces_.end() && it->second.stream_id == id) return it->second.memory.get();
  auto memory = cuda::device_array<std::byte>(options_.workspace_bytes);  // may throw: nothing changed yet
  if (it == workspaces_.end())
    return workspaces_.emplace(stream, Workspace{id, std::move(memory)}).first->second.memory.get();
  retired_workspaces_.push_back(std::move(it->second.memory));
  it->second = Workspace{id, std::move(memory)};
  return it->second.memory.get();
}

namespace {
int alignment(const void* p) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(p);
  return int(std::min<uintptr_t>(bits & (~bits + 1), 256));  // the lowest set bit, at most 256
}
}  // namespace

void Blas::run(const Shape& s, const void* A, const void* B, float* C, bool accumulate, cudaStream_t stream) {
  Plan& p = plan(s, stream);
  p.last_a = A, p.last_b = B, p.last_c = C, p.last_accumulate = accumulate;
  last_ = &p;
  const float one = 1.f, beta = accumulate ? 1.f : 0.f;
  CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &one, A, p.a, B, p.b, &beta, C, p.c, C, p.c, &p.algo, workspace(stream),
                              options_.workspace_bytes, stream));
}

std::vector<Blas::RankTimes> Blas::time_ranks(int ranks, int repeats, cudaStream_t stream,
                                              const std::vector<int>& splits) {
  if (ranks < 1 || repeats < 1) throw std::invalid_argument("Blas::time_ranks: needs at least one rank and repeat");
  for (int k : splits)
    if (k < 1) throw std::invalid_argument("Blas::time_ranks: a split of K must be at least 1");
  int dev = 0, l2 = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const size_t flush_bytes = std::max<size_t>(2 * size_t(l2), 1 << 20);  // twice L2: none of the operands stays
  const cuda::DeviceArray<std::byte> flush = cuda::device_array<std::byte>(flush_bytes);
  const cuda::Event start = cuda::make_event(cudaEventDefault), stop = cuda::make_event(cudaEventDefault);
  constexpr float kNone = std::numeric_limits<float>::quiet_NaN();
  std::vector<RankTimes> out;
  for (const auto& entry : plans_) {  // not a structured binding: the lambda below captures them
    const Shape& s = entry.first;
    const Plan& used = entry.second;
    if (!used.last_c) continue;
    // The median microseconds of the product's last call with the answer of rank r, K in k
    // splits (k > 0); NaN where the heuristic has no such rank or the answer takes no such split.
    const auto time = [&](int r, int k) {
      Plan p;
      try {
        p = make_plan(s, r, k);
      } catch (const std::out_of_range&) {
        return kNone;
      }
      try {
        const float one = 1.f, beta = used.last_accumulate ? 1.f : 0.f;
        const auto call = [&] {
          CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &one, used.last_a, p.a, used.last_b, p.b, &beta, used.last_c,
                                      p.c, used.last_c, p.c, &p.algo, workspace(stream), options_.workspace_bytes,
                                      stream));
        };
        call();  // the first call of an algorithm may load its kernel
        std::vector<float> ms(static_cast<size_t>(repeats));
        for (float& m : ms) {
          CUDA_CHECK(cudaMemsetAsync(flush.get(), 0, flush_bytes, stream));
          CUDA_CHECK(cudaEventRecord(start.get(), stream));
          call();
          CUDA_CHECK(cudaEventRecord(stop.get(), stream));
          CUDA_CHECK(cudaEventSynchronize(stop.get()));
          CUDA_CHECK(cudaEventElapsedTime(&m, start.get(), stop.get()));
        }
        std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
        destroy_plan(p);
        return 1000.f * ms[ms.size() / 2];
      } catch (...) {
        destroy_plan(p);
        throw;
      }
    };
    RankTimes times{s, std::vector<float>(size_t(ranks), kNone), splits, std::vector<float>(splits.size(), kNone)};
    for (int r = 0; r < ranks; ++r)
      if (std::isnan(times.us[size_t(r)] = time(r, 0))) break;  // the heuristic has no more answers
    for (size_t i = 0; i < splits.size(); ++i) times.split_us[i] = time(0, splits[i]);
    out.push_back(std::move(times));
  }
  return out;
}

Blas::AlgoConfig Blas::last_algorithm() const {
  if (!last_) throw std::logic_error("Blas::last_algorithm: no product has run");
  int32_t id = 0, split_k = 1;
  uint32_t tile = 0, stages = 0;
  size_t written = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&last_->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written));
  CUBLAS_CHECK(
      cublasLtMatmulAlgoConfigGetAttribute(&last_->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written));
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&last_->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k,
                                                    sizeof split_k, &written));
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&last_->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                                    sizeof stages, &written));
  return {id, int(tile), split_k, int(stages)};
}

void Blas::gemm(bool ta, bool tb, int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C,
                int ldc, bool accumulate, cudaStream_t stream) {
  run(Shape{ta, tb, m, n, k, lda, ldb, ldc, alignment(A), alignment(B), alignment(C), 0}, A, B, C, accumulate, stream);
}

void Blas::gemm_bf16(bool ta, bool tb, int m, int n, int k, const Bf16* A, int lda, const Bf16* B, int ldb, float* C,
                     int ldc, bool accumulate, cudaStream_t stream) {
  run(Shape{ta, tb, m, n, k, lda, ldb, ldc, alignment(A), alignment(B), alignment(C), 1}, A, B, C, accumulate, stream);
}

// Y[row, col] += bias[col]; one thread per group of 4 columns of a row (float4 when N % 4 == 0).
__global__ void bias_add_kernel(float* __restrict__ Y, const float* __restrict__ bias, int M, int N, bool vec) {
  follow_previous_kernel();
  ColumnGroup c;
  if (!column_group(M, N, c)) return;
  float y[4], b[4];
  load4(Y + c.off, c.n, vec, y);
  load4(bias + 4 * c.g, c.n, vec, b);
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) y[k] += b[k];
  store4(Y + c.off, c.n, vec, y);
}

namespace {
void bias_add(float* Y, const float* bias, int M, int N, cudaStream_t stream) {
  if (bias == nullptr) return;
  const bool vec = N % 4 == 0 && aligned16(Y) && aligned16(bias);
  const size_t threads = size_t(M) * ((N + 3) / 4);
  launch_overlapped(bias_add_kernel, dim3(ceil_div(threads, 256)), dim3(256), 0, stream, Y, bias, M, N, vec);
}
}  // namespace

// GEMM: reads 4*(M*K + N*K) bytes, writes 4*M*N; the bias add reads and writes Y once more
// (8*M*N bytes) plus 4*N for the bias.
void linear_forward_cuda(Blas& blas, const float* X, const float* W, const float* bias, float* Y, int M, int N, int K,
                         cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_forward_cuda");
  if (M == 0) return;
  if (linear_forward_takes_few_rows(M, N, K, blas.tf32())) {
    linear_forward_few_rows_cuda(X, W, bias, Y, M, N, K, stream);
    return;
  }
  blas.gemm(true, false, N, M, K, W, K, X, K, Y, N, false, stream);
  bias_add(Y, bias, M, N, stream);
}

// Reads 4*(M*N + N*K) bytes, writes 4*M*K.
void linear_backward_input_cuda(Blas& blas, const float* dY, const float* W, float* dX, int M, int N, int K,
                                cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_input_cuda");
  if (M == 0) return;
  blas.gemm(false, false, K, M, N, W, K, dY, N, dX, K, false, stream);
}

// Reads 4*(M*N + M*K) bytes, writes 4*N*K (and reads it too when accumulating).
void linear_backward_weight_cuda(Blas& blas, const float* dY, const float* X, float* dW, int M, int N, int K,
                                 bool accumulate, cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_weight_cuda");
  if (M == 0) {  // an empty sum: dW = 0, or unchanged when accumulating
    if (!accumulate) CUDA_CHECK(cudaMemsetAsync(dW, 0, size_t(N) * K * sizeof(float), stream));
    return;
  }
  blas.gemm(false, true, K, N, M, X, K, dY, N, dW, K, accumulate, stream);
}

// The bf16 products: the same three calls with 2-byte operands (half the operand bytes).
void linear_forward_bf16_cuda(Blas& blas, const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N,
                              int K, cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_forward_bf16_cuda");
  if (M == 0) return;
  if (linear_forward_takes_few_rows(M, N, K, false)) {
    linear_forward_few_rows_bf16_cuda(X, W, bias, Y, M, N, K, stream);
    return;
  }
  blas.gemm_bf16(true, false, N, M, K, W, K, X, K, Y, N, false, stream);
  bias_add(Y, bias, M, N, stream);
}

void linear_backward_input_bf16_cuda(Blas& blas, const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K,
                                     cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_input_bf16_cuda");
  if (M == 0) return;
  blas.gemm_bf16(false, false, K, M, N, W, K, dY, N, dX, K, false, stream);
}

void linear_backward_weight_bf16_cuda(Blas& blas, const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K,
                                      bool accumulate, cudaStream_t stream) {
  check_linear_shape(M, N, K, "linear_backward_weight_bf16_cuda");
  if (M == 0) {
    if (!accumulate) CUDA_CHECK(cudaMemsetAsync(dW, 0, size_t(N) * K * sizeof(float), stream));
    return;
  }
  blas.gemm_bf16(false, true, K, N, M, X, K, dY, N, dW, K, accumulate, stream);
}

// Adds 4 columns of one row of dY to the column sums.
struct BiasGradRows {
  const float* dY;
  int N;
  bool vec;
  __device__ __forceinline__ void operator()(size_t row, unsigned col0, unsigned n, float (&acc)[1][4]) const {
    float d[4];
    load4(dY + row * N + col0, n, vec, d);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[0][k] += d[k];
  }
};

__global__ void bias_grad_kernel(BiasGradRows f, int M, unsigned rows_per_chunk, float* partial) {
  follow_previous_kernel();
  colsum::stage1<1>(f, M, f.N, rows_per_chunk, partial);
}

// Reads 4*M*N bytes; the partial sums move 8 * chunks * N more (chunks <= 256).
void bias_grad_cuda(const float* dY, float* db, int M, int N, float* scratch, cudaStream_t stream) {
  if (M < 0 || N < 0) throw std::invalid_argument("bias_grad_cuda: negative shape");
  if (N == 0) return;
  const BiasGradRows f{dY, N, N % 4 == 0 && aligned16(dY)};
  launch_overlapped(bias_grad_kernel, colsum::stage1_grid(M, N), colsum::stage1_block(), colsum::smem_bytes(1), stream,
                    f, M, colsum::rows_per_chunk(size_t(M)), scratch);
  colsum::finish_cuda(scratch, colsum::chunks(size_t(M)), N, db, nullptr, stream);
}

}  // namespace grpo
