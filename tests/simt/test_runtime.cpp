// Self-tests of the emulated runtime: deferred execution, copies, stream capture and graphs
// (by-value arguments frozen, pointed-to memory live, forbidden calls, exec update).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
bool set_checks(bool on);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;

TEST(SimtRuntime, DeviceLooksLikeSm90) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  cudaDeviceProp p;
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_STREQ(p.name, "SIMT emulator (sm_90)");
  int smem = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  EXPECT_EQ(smem, 227 << 10);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(SimtRuntime, FreshAllocationsArePoisonedAndCopiesChecked) {
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 5 * sizeof(float)), cudaSuccess);
  std::vector<float> h(5, 0.f);
  ASSERT_EQ(cudaMemcpy(h.data(), d, 5 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float x : h) EXPECT_TRUE(std::isnan(x));
  // Overrunning the allocation, or a wrong direction, is refused.
  EXPECT_EQ(cudaMemcpy(h.data(), d, 6 * sizeof(float), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 4, cudaMemcpyDeviceToHost), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 4, cudaMemcpyDefault), cudaSuccess);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(h.data()), cudaErrorInvalidValue);  // not ours
  (void)cudaGetLastError();
}

TEST(SimtRuntime, AsyncWorkIsDeferredUntilSynchronisation) {
  const int n = 77;
  const auto x = grpo::test::random_floats(n, 21);
  DeviceBuffer<float> d_x(x), d_y(grpo::test::poisoned(n));
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, n * sizeof(float)), cudaSuccess);
  for (int i = 0; i < n; ++i) pinned[i] = -7.f;
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaEvent_t done;
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 1.f, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d_y.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, s), cudaSuccess);
  EXPECT_EQ(pinned[0], -7.f) << "read without synchronising must see stale data, as on a GPU";
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  for (int i = 0; i < n; ++i) EXPECT_EQ(pinned[i], 2.f * x[i] + 1.f) << i;
  // A pageable source is staged at the call: changing it afterwards does not matter.
  std::vector<float> pageable(n, 3.f);
  ASSERT_EQ(cudaMemcpyAsync(d_y.get(), pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
  pageable.assign(n, 4.f);
  EXPECT_EQ(d_y.download(), std::vector<float>(n, 3.f));
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// A synchronous cudaMemcpy from pageable memory returns once the source is staged; the DMA
// lands later on the legacy stream, as does a synchronous cudaMemset. A non-blocking stream is
// not ordered after either; a blocking stream, a legacy-stream sync or a later synchronous copy is.
// The kernel on the non-blocking stream races with the lazy copy on purpose: the memory checks,
// which would report it (san_copy), are off.
TEST(SimtRuntime, LegacyStreamCopiesDoNotOrderNonBlockingStreams) {
  struct ChecksOff {
    bool was = simt::set_checks(false);
    ~ChecksOff() { simt::set_checks(was); }
  } off;
  const int n = 40;
  const auto x = grpo::test::random_floats(n, 41);
  float *d_x = nullptr, *d_y = nullptr;
  ASSERT_EQ(cudaMalloc(&d_x, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_y, n * sizeof(float)), cudaSuccess);
  cudaStream_t nb, blocking;
  ASSERT_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  std::vector<float> got(n);
  auto run_on = [&](cudaStream_t s) {
    ASSERT_EQ(cudaMemset(d_y, 0, n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(simt_test::axpb(d_x, d_y, n, 2.f, 1.f, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(got.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  };
  run_on(nb);  // the kernel read x before the copy landed: the allocation's poison
  for (float v : got) EXPECT_TRUE(std::isnan(v));
  std::vector<float> back(n);
  ASSERT_EQ(cudaMemcpy(back.data(), d_x, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, x) << "a later synchronous copy is ordered after the legacy stream";
  run_on(blocking);
  for (int i = 0; i < n; ++i) EXPECT_EQ(got[i], 2.f * x[i] + 1.f) << i;
  ASSERT_EQ(cudaMemset(d_y, 0, n * sizeof(float)), cudaSuccess);  // lands lazily too
  ASSERT_EQ(cudaMemcpyAsync(back.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost, nb), cudaSuccess);
  EXPECT_EQ(back, got);
  // Synchronising the legacy stream makes the non-blocking stream's later work see the data.
  const std::vector<float> y0(n, 5.f);
  ASSERT_EQ(cudaMemcpy(d_x, y0.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x, d_y, n, 1.f, 0.f, nb), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(got.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost, nb), cudaSuccess);
  EXPECT_EQ(got, y0);
  EXPECT_EQ(cudaStreamDestroy(nb), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaFree(d_x), cudaSuccess);
  EXPECT_EQ(cudaFree(d_y), cudaSuccess);
}

TEST(SimtGraph, ReplayUsesCapturedValuesAndCurrentMemory) {
  const int n = 70;
  const auto x1 = grpo::test::random_floats(n, 31), x2 = grpo::test::random_floats(n, 32);
  DeviceBuffer<float> d_x(x1), d_y(grpo::test::poisoned(n));
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float a = 2.f, b = 1.f;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, a, b, s), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 1u);
  for (float v : d_y.download()) EXPECT_TRUE(std::isnan(v)) << "capture must not execute";
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  a = 5.f, b = -3.f;  // host values change after capture: the graph keeps 2 and 1
  d_x.upload(x2);     // memory behind a pointer argument changes: the graph reads the new data
  // The upload is a pageable copy on the legacy stream, which a non-blocking stream ignores.
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.f * x2[i] + 1.f;
  EXPECT_EQ(d_y.download(), want);

  // Exec update with new argument values but the same topology takes the new values.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, a, b, s), cudaSuccess);
  cudaGraph_t g2;
  ASSERT_EQ(cudaStreamEndCapture(s, &g2), cudaSuccess);
  cudaGraphExecUpdateResultInfo info;
  ASSERT_EQ(cudaGraphExecUpdate(exec, g2, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < n; ++i) want[i] = 5.f * x2[i] - 3.f;
  EXPECT_EQ(d_y.download(), want);

  // A different topology (two nodes) is refused.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, a, b, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d_y.get(), 0, sizeof(float), s), cudaSuccess);
  cudaGraph_t g3;
  ASSERT_EQ(cudaStreamEndCapture(s, &g3), cudaSuccess);
  EXPECT_EQ(cudaGraphExecUpdate(exec, g3, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  (void)cudaGetLastError();
  for (cudaGraph_t x : {g, g2, g3}) EXPECT_EQ(cudaGraphDestroy(x), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(SimtGraph, MemcpyNodesCopyAtReplay) {
  const int n = 13;
  DeviceBuffer<float> d(std::vector<float>(n, 1.f));
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, n * sizeof(float)), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  d.upload(std::vector<float>(n, 9.f));
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < n; ++i) EXPECT_EQ(pinned[i], 9.f);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFreeHost(pinned);
}

// Each forbidden call inside a global-mode capture returns 900; the capture is then invalidated
// (901 for later work and for cudaStreamEndCapture).
TEST(SimtGraph, ForbiddenCallsInCaptureInvalidateIt) {
  DeviceBuffer<float> d(std::vector<float>(8, 1.f));
  std::vector<float> pageable(8, 2.f);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 8 * sizeof(float)), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  float* extra = nullptr;
  cudaEvent_t ev;
  ASSERT_EQ(cudaEventCreate(&ev), cudaSuccess);
  const std::vector<std::pair<const char*, std::function<cudaError_t()>>> forbidden = {
      {"cudaMalloc", [&] { return cudaMalloc(&extra, 16); }},
      {"cudaFree", [&] { return cudaFree(d.get()); }},
      {"cudaMemcpy", [&] { return cudaMemcpy(pinned, d.get(), 32, cudaMemcpyDeviceToHost); }},
      {"cudaMemset", [&] { return cudaMemset(d.get(), 0, 32); }},
      {"cudaMemcpyAsync pageable",
       [&] { return cudaMemcpyAsync(d.get(), pageable.data(), 32, cudaMemcpyHostToDevice, s); }},
      {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(s); }},
      {"cudaDeviceSynchronize", [&] { return cudaDeviceSynchronize(); }},
      {"cudaEventSynchronize", [&] { return cudaEventSynchronize(ev); }},
  };
  for (const auto& [name, call] : forbidden) {
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess) << name;
    ASSERT_EQ(simt_test::axpb(d.get(), d.get(), 8, 1.f, 0.f, s), cudaSuccess) << name;
    EXPECT_EQ(call(), cudaErrorStreamCaptureUnsupported) << name;
    EXPECT_EQ(simt_test::axpb(d.get(), d.get(), 8, 1.f, 0.f, s), cudaErrorStreamCaptureInvalidated) << name;
    cudaGraph_t g = reinterpret_cast<cudaGraph_t>(&s);
    EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated) << name;
    EXPECT_EQ(g, nullptr) << name;
    (void)cudaGetLastError();
  }
  // Launching on the legacy default stream while another stream captures is refused too.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(simt_test::axpb(d.get(), d.get(), 8, 1.f, 0.f, 0), cudaErrorStreamCaptureImplicit);
  cudaGraph_t g;
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  EXPECT_EQ(d.download(), std::vector<float>(8, 1.f)) << "nothing captured may have run";
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
  cudaFreeHost(pinned);
}

// A WHILE node added to a capture with cudaGraphAddNode, its body captured on a second stream
// while the first still captures: the body runs until a kernel in it clears the handle, the
// handle takes its default again at every launch, the nodes after the loop run once after it.
TEST(SimtGraph, WhileNodeRunsItsBodyUntilAKernelClearsTheHandle) {
  DeviceBuffer<unsigned> count(std::vector<unsigned>{5}), arrived(std::vector<unsigned>{0}),
      trips(std::vector<unsigned>(8, 0));
  const int n = 16;
  const auto x = grpo::test::random_floats(n, 41);
  DeviceBuffer<float> d_x(x), d_y(grpo::test::poisoned(n));
  cudaStream_t s, body_stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&body_stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);  // the uploads above, before the non-blocking streams

  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 0.f, s), cudaSuccess);
  cudaStreamCaptureStatus st;
  cudaGraph_t g = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t num_deps = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s, &st, nullptr, &g, &deps, nullptr, &num_deps), cudaSuccess);
  ASSERT_EQ(num_deps, 1u);
  cudaGraphConditionalHandle h = 0;
  ASSERT_EQ(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault), cudaSuccess);
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = h;
  p.conditional.type = cudaGraphCondTypeWhile;
  p.conditional.size = 1;
  cudaGraphNode_t loop = nullptr;
  ASSERT_EQ(cudaGraphAddNode(&loop, g, deps, nullptr, num_deps, &p), cudaSuccess);
  ASSERT_NE(p.conditional.phGraph_out, nullptr);
  ASSERT_EQ(cudaStreamBeginCaptureToGraph(body_stream, p.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                          cudaStreamCaptureModeRelaxed),
            cudaSuccess);
  ASSERT_EQ(simt_test::countdown(count.get(), arrived.get(), trips.get(), h, body_stream), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(body_stream, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamUpdateCaptureDependencies(s, &loop, nullptr, 1, cudaStreamSetCaptureDependencies), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_y.get(), d_y.get(), n, 1.f, 1.f, s), cudaSuccess);
  cudaGraph_t ended = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &ended), cudaSuccess);
  ASSERT_EQ(ended, g);
  size_t top = 0, inside = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &top), cudaSuccess);
  ASSERT_EQ(cudaGraphGetNodes(p.conditional.phGraph_out[0], nullptr, &inside), cudaSuccess);
  EXPECT_EQ(top, 3u);
  EXPECT_EQ(inside, 1u);
  cudaGraphNode_t nodes[3] = {};
  ASSERT_EQ(cudaGraphGetNodes(g, nodes, &top), cudaSuccess);
  std::vector<cudaGraphNodeType> types;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    types.push_back(type);
  }
  EXPECT_EQ(types, (std::vector<cudaGraphNodeType>{cudaGraphNodeTypeKernel, cudaGraphNodeTypeConditional,
                                                   cudaGraphNodeTypeKernel}));
  cudaGraphNodeType unset = cudaGraphNodeTypeEmpty;
  EXPECT_EQ(cudaGraphNodeGetType(nullptr, &unset), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(trips.download(), std::vector<unsigned>(8, 0)) << "capture must not execute";

  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(trips.download(), (std::vector<unsigned>{3, 3, 3, 3, 3, 0, 0, 0})) << "five trips of three blocks";
  EXPECT_EQ(count.download(), std::vector<unsigned>{0});
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.f * x[i] + 1.f;
  EXPECT_EQ(d_y.download(), want) << "the node after the loop ran once";

  // The body cleared the handle; the next launch starts from the default (1) again.
  count.upload({2});
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(trips.download(), (std::vector<unsigned>{6, 6, 3, 3, 3, 0, 0, 0}));

  // A handle belongs to the graph it was made for.
  cudaGraph_t other;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 1.f, 0.f, s), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &other), cudaSuccess);
  cudaGraphNode_t last = nullptr;
  size_t one = 1;
  ASSERT_EQ(cudaGraphGetNodes(other, &last, &one), cudaSuccess);
  cudaGraphNodeParams q = p;
  EXPECT_EQ(cudaGraphAddNode(&loop, other, &last, nullptr, 1, &q), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  // An update whose body differs is refused.
  cudaGraphExecUpdateResultInfo info;
  EXPECT_EQ(cudaGraphExecUpdate(exec, other, &info), cudaErrorGraphExecUpdateFailure);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  for (cudaGraph_t x : {g, other}) EXPECT_EQ(cudaGraphDestroy(x), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(body_stream), cudaSuccess);
}

}  // namespace
