// Self-tests of the cuBLASLt shim: matmul against a double-precision reference for every
// transpose pair and algorithm, algorithms that differ in the last bits, a heuristic that
// answers differently during a capture, the warm-up rule inside a capture, alignment, and an
// algorithm's configuration.
#include <gtest/gtest.h>

#include <cublasLt.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/test_util.h"

namespace {

using grpo::test::DeviceBuffer;

// Descriptors for column-major D[m, n] = op(A) op(B), fp32.
struct Lt {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Lt(bool ta, bool tb, int m, int n, int k, uint32_t align = 256) {
    EXPECT_EQ(cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    const int32_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof oa), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof ob), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, ta ? k : m, ta ? m : k, ta ? k : m), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, tb ? n : k, tb ? k : n, tb ? n : k), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, m, n, m), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align), CUBLAS_STATUS_SUCCESS);
  }
  ~Lt() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(h);
  }
  std::vector<cublasLtMatmulAlgo_t> heuristic(int count) {
    std::vector<cublasLtMatmulHeuristicResult_t> r(count);
    int got = 0;
    EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, d, d, pref, count, r.data(), &got), CUBLAS_STATUS_SUCCESS);
    std::vector<cublasLtMatmulAlgo_t> out;
    for (int i = 0; i < got; ++i) out.push_back(r[i].algo);
    return out;
  }
  cublasStatus_t run(const cublasLtMatmulAlgo_t& algo, const float* A, const float* B, float* D, cudaStream_t s) {
    const float one = 1.f, zero = 0.f;
    return cublasLtMatmul(h, desc, &one, A, a, B, b, &zero, D, d, D, d, &algo, nullptr, 0, s);
  }
};

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(SimtCublasLt, EveryAlgorithmMatchesTheReferenceAndTheyDifferInBits) {
  const int m = 9, n = 7, k = 61;
  const auto A = grpo::test::random_floats(m * k, 91), B = grpo::test::random_floats(k * n, 92);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Lt lt(ta, tb, m, n, k);
      DeviceBuffer<float> dA(A), dB(B), dD(grpo::test::poisoned(m * n));
      std::vector<float> want(m * n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          double acc = 0;
          for (int l = 0; l < k; ++l)
            acc += double(ta ? A[l + i * k] : A[i + l * m]) * (tb ? B[j + l * n] : B[l + j * k]);
          want[i + j * m] = float(acc);
        }
      const auto algos = lt.heuristic(8);
      ASSERT_GE(algos.size(), 2u);
      std::vector<std::vector<float>> got;
      for (const auto& al : algos) {
        ASSERT_EQ(lt.run(al, dA.get(), dB.get(), dD.get(), nullptr), CUBLAS_STATUS_SUCCESS);
        got.push_back(dD.download());
        EXPECT_LE(grpo::test::rel_l2(got.back(), want), 1e-6) << ta << tb;
      }
      bool differ = false;
      for (size_t i = 1; i < got.size(); ++i) differ |= !same_bits(got[i], got[0]);
      EXPECT_TRUE(differ) << "the algorithms must sum in different orders";
    }
}

TEST(SimtCublasLt, HeuristicDiffersDuringCaptureAndCaptureNeedsAWarmUp) {
  const int m = 6, n = 5, k = 33;
  Lt lt(false, false, m, n, k);
  DeviceBuffer<float> dA(grpo::test::random_floats(m * k, 93)), dB(grpo::test::random_floats(k * n, 94)),
      eager(grpo::test::poisoned(m * n)), replay(grpo::test::poisoned(m * n));
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const cublasLtMatmulAlgo_t chosen = lt.heuristic(1).at(0);
  ASSERT_EQ(lt.run(chosen, dA.get(), dB.get(), eager.get(), s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const cublasLtMatmulAlgo_t in_capture = lt.heuristic(1).at(0);
  EXPECT_NE(std::memcmp(&in_capture, &chosen, sizeof chosen), 0) << "the model's heuristic answers differently";
  EXPECT_EQ(lt.run(in_capture, dA.get(), dB.get(), replay.get(), s), CUBLAS_STATUS_NOT_SUPPORTED)
      << "an algorithm never run eagerly cannot be captured";
  EXPECT_EQ(lt.run(chosen, dA.get(), dB.get(), replay.get(), s), CUBLAS_STATUS_SUCCESS);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(same_bits(replay.download(), eager.download()));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(SimtCublasLt, AnAlgorithmNeedsTheAlignmentItWasChosenFor) {
  const int m = 4, n = 3, k = 5;
  DeviceBuffer<float> dA(grpo::test::random_floats(m * k + 1, 95)), dB(grpo::test::random_floats(k * n, 96)), dD(m * n);
  Lt strict(false, false, m, n, k), loose(false, false, m, n, k, 4);
  EXPECT_EQ(strict.run(strict.heuristic(1).at(0), dA.get() + 1, dB.get(), dD.get(), nullptr),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(loose.run(loose.heuristic(1).at(0), dA.get() + 1, dB.get(), dD.get(), nullptr), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// An answer's configuration: its id is the model's algorithm (the heuristic's answers name four
// different ones), tile and stages read as undefined, one K split; sizes are checked as
// cuBLASLt checks them, and attributes the model has no value for say so.
TEST(SimtCublasLt, AnAlgorithmsConfigurationNamesItsModel) {
  Lt lt(false, true, 5, 6, 7);
  std::vector<int32_t> ids;
  for (const cublasLtMatmulAlgo_t& algo : lt.heuristic(4)) {
    int32_t id = -1, split = 0;
    uint32_t tile = 7;
    size_t written = 0;
    EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(written, sizeof id);
    EXPECT_EQ(
        cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split, &written),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(split, 1);
    EXPECT_EQ(tile, 0u);
    ids.push_back(id);
    size_t needed = 0;
    EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, nullptr, 0, &needed),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(needed, sizeof(int32_t));
    uint64_t wide = 0;
    EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &wide, sizeof wide, &written),
              CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(
        cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &tile, sizeof tile, &written),
        CUBLAS_STATUS_NOT_SUPPORTED);
  }
  ASSERT_EQ(ids.size(), 4u);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2, 3}));
  cublasLtMatmulAlgo_t garbage{};
  int32_t id = 0;
  EXPECT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&garbage, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
}

}  // namespace
