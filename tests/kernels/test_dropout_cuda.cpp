// Dropout on the device: the same mask as the host bit for bit, and a captured graph that reads
// the epoch from device memory draws a fresh mask on every replay.
#include <cstring>
#include <vector>

#include "kernels/dropout.h"
#include "kernels/gelu.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DropoutCuda, ApplyEqualsHostBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 6000;
  for (auto [M, N, p, offset] : {std::tuple{37, 23, 0.1f, 0}, {16, 64, 0.5f, 0}, {16, 64, 0.1f, 1}, {5, 9, 0.f, 0}}) {
    const size_t n = size_t(M) * N;
    const auto x = random_floats(n + offset, ++seed);
    const uint32_t epoch = 999;
    std::vector<float> want(n);
    dropout_apply_host(x.data() + offset, want.data(), M, N, {p, 31, Purpose::DropoutRollout, &epoch, 17});
    DeviceBuffer<float> dx(x), dy(poisoned(n + offset));
    DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{epoch});
    dropout_apply_cuda(dx.get() + offset, dy.get() + offset, M, N, {p, 31, Purpose::DropoutRollout, depoch.get(), 17},
                       nullptr);
    const auto got = dy.download();
    EXPECT_TRUE(same_bits(std::vector<float>(got.begin() + offset, got.end()), want)) << M << "x" << N << " p " << p;
  }
}

// Capture bias + GELU + dropout once, then replay with the epoch advanced in device memory:
// each replay must equal the host twin at that epoch, and two epochs must differ.
TEST(DropoutCuda, GraphReplayReadsTheEpochFromDeviceMemory) {
  GRPO_REQUIRE_DEVICE();
  const int M = 11, N = 36;
  const auto a = random_floats(size_t(M) * N, 1, -2.f, 2.f), b = random_floats(N, 2);
  DeviceBuffer<float> da(a), db(b), dout(poisoned(a.size()));
  DeviceBuffer<uint32_t> depoch(std::vector<uint32_t>{0});
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  bias_gelu_dropout_forward_cuda(da.get(), db.get(), dout.get(), M, N, {0.3f, 8, Purpose::DropoutLoss, depoch.get(), 0},
                                 stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<std::vector<float>> outs;
  for (uint32_t epoch : {4u, 5u}) {
    depoch.upload({epoch});
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    outs.push_back(dout.download());
    std::vector<float> want(a.size());
    bias_gelu_dropout_forward_host(a.data(), b.data(), want.data(), M, N, {0.3f, 8, Purpose::DropoutLoss, &epoch, 0});
    EXPECT_TRUE(test::all_close(outs.back(), want)) << "epoch " << epoch;
  }
  EXPECT_FALSE(same_bits(outs[0], outs[1]));
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace grpo
