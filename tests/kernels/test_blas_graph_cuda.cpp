// Graph replay equals eager launches bit for bit for the three products of matmul.h: the Blas
// context fixes one algorithm per shape at its first (eager) use. In the simt build the shim's
// algorithms sum in different orders and its heuristic answers differently during a capture,
// so a per-call choice would show here as differing bits.
#include <cstring>
#include <vector>

#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;

TEST(BlasGraphCuda, CapturedProductsEqualEagerBitForBit) {
  GRPO_REQUIRE_DEVICE();
  const int M = 33, N = 21, K = 47;
  Blas blas;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<float> dX(random_floats(size_t(M) * K, 301)), dW(random_floats(size_t(N) * K, 302)),
      dY(random_floats(size_t(M) * N, 303)), b(random_floats(N, 304));
  const std::vector<float> dW0 = random_floats(size_t(N) * K, 305);
  DeviceBuffer<float> eY(poisoned(size_t(M) * N)), edX(poisoned(size_t(M) * K)), edW(dW0);
  DeviceBuffer<float> gY(poisoned(size_t(M) * N)), gdX(poisoned(size_t(M) * K)), gdW(dW0);
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads went to the legacy stream
  auto products = [&](float* Y, float* dXo, float* dWo) {
    linear_forward_cuda(blas, dX.get(), dW.get(), b.get(), Y, M, N, K, stream);
    linear_backward_input_cuda(blas, dY.get(), dW.get(), dXo, M, N, K, stream);
    linear_backward_weight_cuda(blas, dY.get(), dX.get(), dWo, M, N, K, true, stream);
  };
  products(eY.get(), edX.get(), edW.get());  // also the warm-up: every shape is met eagerly
  CUDA_CHECK(cudaStreamSynchronize(stream));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  products(gY.get(), gdX.get(), gdW.get());
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));

  const auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(gY.download(), eY.download())) << "forward";
  EXPECT_TRUE(same(gdX.download(), edX.download())) << "backward input";
  EXPECT_TRUE(same(gdW.download(), edW.download())) << "backward weight (accumulating)";
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// A product on a second stream, forked inside the capture, needs that stream's own workspace
// (two products may run at once): the stream's first product must be eager, as a shape's must.
TEST(BlasGraphCuda, AStreamsFirstProductInsideACaptureThrows) {
  GRPO_REQUIRE_DEVICE();
  const int M = 9, N = 8, K = 12;
  Blas blas;
  cudaStream_t s0, s1;
  cudaEvent_t fork, join;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  DeviceBuffer<float> dX(random_floats(size_t(M) * K, 311)), dW(random_floats(size_t(N) * K, 312)),
      eY(poisoned(size_t(M) * N)), gY(poisoned(size_t(M) * N));
  CUDA_CHECK(cudaDeviceSynchronize());
  linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, eY.get(), M, N, K, s0);  // the shape, on s0 only
  CUDA_CHECK(cudaStreamSynchronize(s0));
  cudaGraphExec_t exec = nullptr;
  const auto capture_on_s1 = [&] {
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CUDA_CHECK(cudaEventRecord(fork, s0));
    CUDA_CHECK(cudaStreamWaitEvent(s1, fork, 0));
    bool threw = false;
    try {
      linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, gY.get(), M, N, K, s1);
    } catch (const CudaError&) {
      threw = true;
    }
    CUDA_CHECK(cudaEventRecord(join, s1));
    CUDA_CHECK(cudaStreamWaitEvent(s0, join, 0));
    CUDA_CHECK(cudaStreamEndCapture(s0, &g));
    if (!threw) CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return threw;
  };
  EXPECT_TRUE(capture_on_s1()) << "s1's first product, inside the capture";
  linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, gY.get(), M, N, K, s1);  // eagerly: s1 gets its own
  CUDA_CHECK(cudaStreamSynchronize(s1));
  EXPECT_FALSE(capture_on_s1()) << "after an eager product on s1";
  ASSERT_NE(exec, nullptr);
  gY.upload(poisoned(size_t(M) * N));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaGraphLaunch(exec, s0));  // the product on s1, forked from s0 and joined back
  CUDA_CHECK(cudaStreamSynchronize(s0));
  EXPECT_EQ(gY.download(), eY.download());
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaEventDestroy(join));
  CUDA_CHECK(cudaEventDestroy(fork));
  CUDA_CHECK(cudaStreamDestroy(s1));
  CUDA_CHECK(cudaStreamDestroy(s0));
}

}  // namespace
}  // namespace grpo
