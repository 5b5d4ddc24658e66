// matmul.h on the device (cuBLAS, or the emulator's GEMM shim) against the OpenBLAS host twins.
#include <cstring>
#include <vector>

#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct Shape {
  int M, N, K;
};
// cuBLASLt's shapes: fewer than 32 outputs or inputs, or more than kFewRowsMax rows (the few-row
// kernel has its own test, test_matmul_few_rows_cuda.cpp).
const Shape kShapes[] = {{37, 23, 19}, {5, 3, 70}, {64, 128, 20}, {300, 40, 33}, {2, 1, 1}};

TEST(MatmulCuda, ForwardMatchesHostWithAndWithoutBias) {
  GRPO_REQUIRE_DEVICE();
  Blas blas;
  uint64_t seed = 1000;
  for (const Shape& s : kShapes) {
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    const auto b = random_floats(s.N, ++seed);
    DeviceBuffer<float> dX(X), dW(W), db(b);
    for (bool with_bias : {false, true}) {
      std::vector<float> want(size_t(s.M) * s.N);
      linear_forward_host(X.data(), W.data(), with_bias ? b.data() : nullptr, want.data(), s.M, s.N, s.K);
      // Offset 1 makes Y misaligned: the bias add takes its scalar path even when N % 4 == 0.
      for (size_t offset : {size_t(0), size_t(1)}) {
        DeviceBuffer<float> dY(poisoned(size_t(s.M) * s.N + offset));
        linear_forward_cuda(blas, dX.get(), dW.get(), with_bias ? db.get() : nullptr, dY.get() + offset, s.M, s.N, s.K,
                            nullptr);
        const auto got = dY.download();
        EXPECT_LE(rel_l2(std::vector<float>(got.begin() + offset, got.end()), want), 1e-5)
            << s.M << "x" << s.N << "x" << s.K << " bias " << with_bias << " offset " << offset;
      }
    }
  }
}

TEST(MatmulCuda, BackwardProductsMatchHost) {
  GRPO_REQUIRE_DEVICE();
  Blas blas;
  uint64_t seed = 2000;
  for (const Shape& s : kShapes) {
    const auto dY = random_floats(size_t(s.M) * s.N, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), old = random_floats(size_t(s.N) * s.K, ++seed);
    DeviceBuffer<float> ddY(dY), dW(W), dX(X);

    std::vector<float> want_dx(size_t(s.M) * s.K);
    linear_backward_input_host(dY.data(), W.data(), want_dx.data(), s.M, s.N, s.K);
    DeviceBuffer<float> got_dx(poisoned(want_dx.size()));
    linear_backward_input_cuda(blas, ddY.get(), dW.get(), got_dx.get(), s.M, s.N, s.K, nullptr);
    EXPECT_LE(rel_l2(got_dx.download(), want_dx), 1e-5) << s.M << "x" << s.N << "x" << s.K;

    for (bool accumulate : {false, true}) {
      auto want = accumulate ? old : std::vector<float>(old.size());
      linear_backward_weight_host(dY.data(), X.data(), want.data(), s.M, s.N, s.K, accumulate);
      DeviceBuffer<float> got(accumulate ? old : poisoned(old.size()));
      linear_backward_weight_cuda(blas, ddY.get(), dX.get(), got.get(), s.M, s.N, s.K, accumulate, nullptr);
      EXPECT_LE(rel_l2(got.download(), want), 1e-5) << s.M << "x" << s.N << "x" << s.K << " acc " << accumulate;
    }
  }
}

TEST(MatmulCuda, Tf32IsAnOptionWithinItsTolerance) {
  GRPO_REQUIRE_DEVICE();
  Blas blas(BlasOptions{Precision::Tf32});
  EXPECT_TRUE(blas.tf32());
  const int M = 33, N = 40, K = 57;
  const auto X = random_floats(size_t(M) * K, 5), W = random_floats(size_t(N) * K, 6);
  std::vector<float> want(size_t(M) * N);
  linear_forward_host(X.data(), W.data(), nullptr, want.data(), M, N, K);
  DeviceBuffer<float> dX(X), dW(W), dY(poisoned(want.size()));
  linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, dY.get(), M, N, K, nullptr);
  EXPECT_LE(rel_l2(dY.download(), want), 1e-3);
  EXPECT_FALSE(Blas().tf32());
}

TEST(MatmulCuda, BiasGradMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 3000;
  for (auto [M, N] : {std::pair{37, 23}, {300, 3}, {9, 132}, {0, 5}}) {
    const auto dY = random_floats(size_t(M) * N, ++seed);
    std::vector<float> want(N);
    bias_grad_host(dY.data(), want.data(), M, N, nullptr);
    DeviceBuffer<float> ddY(dY), scratch(poisoned(bias_grad_scratch_floats(M, N))), db(poisoned(2 * size_t(N)));
    bias_grad_cuda(ddY.get(), db.get(), M, N, scratch.get(), nullptr);
    bias_grad_cuda(ddY.get(), db.get() + N, M, N, scratch.get(), nullptr);
    const auto got = db.download();
    EXPECT_LE(rel_l2(std::vector<float>(got.begin(), got.begin() + N), want), 1e-5) << M << "x" << N;
    EXPECT_EQ(std::memcmp(got.data(), got.data() + N, N * sizeof(float)), 0) << M << "x" << N;
  }
}

// The Blas context owns its workspace, so a GEMM can be captured into a graph; the replay
// reads whatever X holds at replay time.
TEST(MatmulCuda, ForwardCapturesIntoAGraphAndReplays) {
  GRPO_REQUIRE_DEVICE();
  const int M = 21, N = 12, K = 10;
  Blas blas;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const auto W = random_floats(size_t(N) * K, 7), b = random_floats(N, 8);
  DeviceBuffer<float> dX(random_floats(size_t(M) * K, 9)), dW(W), db(b), dY(poisoned(size_t(M) * N));
  linear_forward_cuda(blas, dX.get(), dW.get(), db.get(), dY.get(), M, N, K, stream);  // warm-up, outside capture
  CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  linear_forward_cuda(blas, dX.get(), dW.get(), db.get(), dY.get(), M, N, K, stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const auto X2 = random_floats(size_t(M) * K, 10);
  dX.upload(X2);
  dY.upload(poisoned(size_t(M) * N));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> want(size_t(M) * N);
  linear_forward_host(X2.data(), W.data(), b.data(), want.data(), M, N, K);
  EXPECT_LE(rel_l2(dY.download(), want), 1e-5);
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace grpo
