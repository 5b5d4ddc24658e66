// Self-tests of the cuBLAS shim: column-major GEMM against a naive double-precision reference
// for all transpose combinations on odd shapes, beta == 0 never reading C, argument checks,
// pointer modes, and the workspace rule inside a capture.
#include <gtest/gtest.h>

#include <cublas_v2.h>

#include <vector>

#include "tests/test_util.h"

namespace {

using grpo::test::DeviceBuffer;

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { EXPECT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS); }
  ~Handle() { cublasDestroy(h); }
};

// C = alpha op(A) op(B) + beta C, column-major, in double.
std::vector<float> gemm_ref(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& A, int lda,
                            const std::vector<float>& B, int ldb, float beta, const std::vector<float>& C, int ldc) {
  std::vector<float> out = C;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double acc = 0;
      for (int l = 0; l < k; ++l)
        acc += double(ta ? A[l + i * lda] : A[i + l * lda]) * double(tb ? B[j + l * ldb] : B[l + j * ldb]);
      out[i + j * ldc] = float(alpha * acc + (beta == 0.f ? 0.0 : double(beta) * C[i + j * ldc]));
    }
  return out;
}

TEST(SimtCublas, SgemmAllTransposesOddShapes) {
  Handle h;
  const int m = 7, n = 5, k = 13;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;  // padded leading dims
      const auto A = grpo::test::random_floats(size_t(lda) * (ta ? m : k), 41);
      const auto B = grpo::test::random_floats(size_t(ldb) * (tb ? k : n), 42);
      const auto C = grpo::test::random_floats(size_t(ldc) * n, 43);
      DeviceBuffer<float> dA(A), dB(B), dC(C);
      const float alpha = 0.75f, beta = -1.25f;
      ASSERT_EQ(cublasSgemm(h.h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha,
                            dA.get(), lda, dB.get(), ldb, &beta, dC.get(), ldc),
                CUBLAS_STATUS_SUCCESS);
      const auto want = gemm_ref(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      EXPECT_LE(grpo::test::rel_l2(dC.download(), want), 1e-6) << "ta " << ta << " tb " << tb;
    }
}

TEST(SimtCublas, GemmExBetaZeroDoesNotReadPoisonedC) {
  Handle h;
  const int m = 6, n = 9, k = 3;
  const auto A = grpo::test::random_floats(m * k, 51), B = grpo::test::random_floats(n * k, 52);
  DeviceBuffer<float> dA(A), dB(B), dC(grpo::test::poisoned(m * n));
  const float alpha = 1.f, beta = 0.f;
  ASSERT_EQ(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, dA.get(), CUDA_R_32F, m, dB.get(), CUDA_R_32F,
                         n, &beta, dC.get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const auto want = gemm_ref(false, true, m, n, k, alpha, A, m, B, n, beta, grpo::test::poisoned(m * n), m);
  EXPECT_TRUE(grpo::test::all_close(dC.download(), want));
}

TEST(SimtCublas, StridedBatchedAndDevicePointerMode) {
  Handle h;
  const int m = 3, n = 4, k = 5, batch = 3;
  const auto A = grpo::test::random_floats(m * k * batch, 61), B = grpo::test::random_floats(k * n * batch, 62);
  DeviceBuffer<float> dA(A), dB(B), dC(grpo::test::poisoned(m * n * batch));
  DeviceBuffer<float> scalars(std::vector<float>{9.f, 0.f});
  ASSERT_EQ(cublasSetPointerMode(h.h, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  // Device mode: alpha is read when the GEMM runs, after this queued copy sets it to 2.
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, sizeof(float)), cudaSuccess);
  *pinned = 2.f;
  ASSERT_EQ(cudaMemcpyAsync(scalars.get(), pinned, sizeof(float), cudaMemcpyHostToDevice, 0), cudaSuccess);
  ASSERT_EQ(cublasSgemmStridedBatched(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, scalars.get(), dA.get(), m, m * k,
                                      dB.get(), k, k * n, scalars.get() + 1, dC.get(), m, m * n, batch),
            CUBLAS_STATUS_SUCCESS);
  const auto got = dC.download();
  cudaFreeHost(pinned);
  for (int b = 0; b < batch; ++b) {
    const std::vector<float> Ab(A.begin() + b * m * k, A.begin() + (b + 1) * m * k);
    const std::vector<float> Bb(B.begin() + b * k * n, B.begin() + (b + 1) * k * n);
    const auto want = gemm_ref(false, false, m, n, k, 2.f, Ab, m, Bb, k, 0.f, std::vector<float>(m * n), m);
    EXPECT_LE(grpo::test::rel_l2(std::vector<float>(got.begin() + b * m * n, got.begin() + (b + 1) * m * n), want),
              1e-6)
        << "batch " << b;
  }
}

TEST(SimtCublas, InvalidArgumentsRefused) {
  Handle h;
  DeviceBuffer<float> d(64);
  const float one = 1.f;
  // lda < m for op(A) = A
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, d.get(), 3, d.get(), 3, &one, d.get(), 4),
            CUBLAS_STATUS_INVALID_VALUE);
  // ldb < n for op(B) = B^T, ldc < m, negative sizes
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_T, 4, 5, 3, &one, d.get(), 4, d.get(), 4, &one, d.get(), 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, d.get(), 4, d.get(), 3, &one, d.get(), 3),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 3, &one, d.get(), 4, d.get(), 3, &one, d.get(), 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d.get(), CUDA_R_16F, 2, d.get(), CUDA_R_32F, 2,
                         &one, d.get(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST(SimtCublas, CaptureNeedsWorkspaceAfterSetStream) {
  Handle h;
  const int m = 5, n = 3, k = 2;
  const auto A = grpo::test::random_floats(m * k, 71), B = grpo::test::random_floats(k * n, 72);
  DeviceBuffer<float> dA(A), dB(B), dC(grpo::test::poisoned(m * n)), ws(1024);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cublasSetWorkspace(h.h, ws.get(), 1024 * sizeof(float)), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h.h, s), CUBLAS_STATUS_SUCCESS);  // resets the workspace
  float alpha = 1.f, beta = 0.f;
  // Warm-up: the shape runs once outside the capture.
  ASSERT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), m, dB.get(), k, &beta, dC.get(), m),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), m, dB.get(), k, &beta, dC.get(), m),
            CUBLAS_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(cublasSetWorkspace(h.h, ws.get(), 1024 * sizeof(float)), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA.get(), m, dB.get(), k, &beta, dC.get(), m),
            CUBLAS_STATUS_SUCCESS);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dC.get(), grpo::test::poisoned(m * n).data(), m * n * sizeof(float), cudaMemcpyDefault),
            cudaSuccess);
  alpha = 100.f;  // host pointer mode: the captured GEMM keeps alpha == 1
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const auto want = gemm_ref(false, false, m, n, k, 1.f, A, m, B, k, 0.f, std::vector<float>(m * n), m);
  EXPECT_LE(grpo::test::rel_l2(dC.download(), want), 1e-6);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

// cuBLAS sets a shape up on its first call, which a capture cannot hold: a shape never run
// outside a capture is refused inside one; once run eagerly, the same shape is captured.
TEST(SimtCublas, CaptureRefusesAShapeNotRunEagerly) {
  Handle h;
  const int m = 4, n = 3, k = 2;
  DeviceBuffer<float> dA(grpo::test::random_floats(m * k, 81)), dB(grpo::test::random_floats(k * n, 82)),
      dC(grpo::test::poisoned(m * n)), ws(1024);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cublasSetStream(h.h, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetWorkspace(h.h, ws.get(), 1024 * sizeof(float)), CUBLAS_STATUS_SUCCESS);
  const float one = 1.f, zero = 0.f;
  auto gemm = [&](int mm) {
    return cublasSgemm(h.h, CUBLAS_OP_N, CUBLAS_OP_N, mm, n, k, &one, dA.get(), m, dB.get(), k, &zero, dC.get(), m);
  };
  ASSERT_EQ(gemm(m), CUBLAS_STATUS_SUCCESS);  // eager: this shape is set up
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(gemm(m), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(m - 1), CUBLAS_STATUS_NOT_SUPPORTED);  // another shape, never run eagerly
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 1u);
  cudaGraphDestroy(g);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaStreamDestroy(s);
}

}  // namespace
