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

}  // namespace
}  // namespace grpo
