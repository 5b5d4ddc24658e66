// Self-tests of the emulated runtime's multi-stream capture: a stream that waits for an event
// recorded inside a capture joins it (a fork), its nodes depend on what its stream and the events
// it waited for put before them, the capture ends only when the forks are joined back, and a
// launch runs the nodes in a topological order drawn from the seed, so a dependency left out
// between two streams shows as a wrong result under some launch.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
bool set_checks(bool on);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;

struct Streams {
  cudaStream_t s0 = nullptr, s1 = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  Streams() {
    EXPECT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
    EXPECT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  }
  ~Streams() {
    cudaEventDestroy(join);
    cudaEventDestroy(fork);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s0);
  }
};

cudaStreamCaptureStatus capture_status(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusInvalidated;
  EXPECT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  return st;
}

TEST(SimtGraphFork, BranchesRunAfterTheForkAndBeforeTheJoin) {
  const int n = 45;
  const auto x = grpo::test::random_floats(n, 41);
  DeviceBuffer<float> d_x(x), d_a(grpo::test::poisoned(n)), d_b(grpo::test::poisoned(n)), d_c(grpo::test::poisoned(n)),
      d_d(grpo::test::poisoned(n));
  Streams k;
  ASSERT_EQ(cudaStreamBeginCapture(k.s0, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_a.get(), n, 2.f, 1.f, k.s0), cudaSuccess);  // a = 2x + 1
  ASSERT_EQ(cudaEventRecord(k.fork, k.s0), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(k.s1, k.fork, 0), cudaSuccess);
  EXPECT_EQ(capture_status(k.s1), cudaStreamCaptureStatusActive);
  ASSERT_EQ(simt_test::axpb(d_a.get(), d_b.get(), n, 3.f, 0.f, k.s1), cudaSuccess);   // b = 3a, on s1
  ASSERT_EQ(simt_test::axpb(d_a.get(), d_c.get(), n, -1.f, 0.f, k.s0), cudaSuccess);  // c = -a, on s0
  ASSERT_EQ(cudaEventRecord(k.join, k.s1), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(k.s0, k.join, 0), cudaSuccess);
  const cudaGraphNode_t* deps = nullptr;
  size_t num_deps = 0;
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamGetCaptureInfo(k.s0, &st, nullptr, nullptr, &deps, nullptr, &num_deps), cudaSuccess);
  EXPECT_EQ(num_deps, 2u) << "after the join s0's next node depends on both branches";
  ASSERT_EQ(simt_test::axpb(d_b.get(), d_d.get(), n, 1.f, 0.f, k.s0), cudaSuccess);  // d = b, after the join
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(k.s0, &g), cudaSuccess);
  EXPECT_EQ(capture_status(k.s1), cudaStreamCaptureStatusNone) << "the fork ends with its capture";
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &count), cudaSuccess);
  EXPECT_EQ(count, 4u) << "events are edges, not nodes";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  for (int launch = 0; launch < 8; ++launch) {  // each launch draws its own order
    for (auto* buf : {&d_a, &d_b, &d_c, &d_d}) buf->upload(grpo::test::poisoned(n));
    ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, k.s0), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(k.s0), cudaSuccess);
    const auto a = d_a.download(), b = d_b.download(), c = d_c.download(), d = d_d.download();
    for (int i = 0; i < n; ++i) {
      const float want_a = 2.f * x[size_t(i)] + 1.f;
      ASSERT_EQ(a[size_t(i)], want_a) << i;
      ASSERT_EQ(b[size_t(i)], 3.f * want_a) << i;
      ASSERT_EQ(c[size_t(i)], -want_a) << i;
      ASSERT_EQ(d[size_t(i)], 3.f * want_a) << i;
    }
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST(SimtGraphFork, AnUnjoinedForkEndsTheCaptureWithAnError) {
  const int n = 8;
  DeviceBuffer<float> d_x(grpo::test::random_floats(n, 42)), d_y(grpo::test::poisoned(n));
  Streams k;
  ASSERT_EQ(cudaStreamBeginCapture(k.s0, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(k.fork, k.s0), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(k.s1, k.fork, 0), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 1.f, 0.f, k.s1), cudaSuccess);
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(k.s1, &g), cudaErrorStreamCaptureUnmatched) << "only the origin ends a capture";
  EXPECT_EQ(cudaStreamEndCapture(k.s0, &g), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  EXPECT_EQ(capture_status(k.s0), cudaStreamCaptureStatusNone);
  EXPECT_EQ(capture_status(k.s1), cudaStreamCaptureStatusNone);
  for (float v : d_y.download()) EXPECT_TRUE(std::isnan(v)) << "capture must not execute";
}

TEST(SimtGraphFork, TwoCapturesDoNotMerge) {
  Streams k;
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(k.s0, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(other, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(k.fork, k.s0), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(other, k.fork, 0), cudaErrorStreamCaptureMerge);
  (void)cudaGetLastError();
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(other, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(k.s0, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
}

// s1 forks before s0 writes y, so nothing orders s1's read of y after the write: the launches'
// drawn orders run it before and after. With the fork after the write, every launch reads it.
// The unordered graph runs with the memory checks off, which would report the read
// (tests/simt/planted/graph_branches_unordered.cu); the ordered one with them on.
TEST(SimtGraphFork, ADependencyLeftOutShowsUnderSomeLaunches) {
  const int n = 16;
  const auto x = grpo::test::random_floats(n, 43);
  const std::vector<float> old_y(size_t(n), 7.f);
  for (const bool ordered : {false, true}) {
    const bool checks = simt::set_checks(true);
    simt::set_checks(checks && ordered);
    DeviceBuffer<float> d_x(x), d_y(old_y), d_z(grpo::test::poisoned(n));
    ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
    Streams k;
    ASSERT_EQ(cudaStreamBeginCapture(k.s0, cudaStreamCaptureModeGlobal), cudaSuccess);
    if (!ordered) {
      ASSERT_EQ(cudaEventRecord(k.fork, k.s0), cudaSuccess);
    }
    ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 0.f, k.s0), cudaSuccess);  // y = 2x
    if (ordered) {
      ASSERT_EQ(cudaEventRecord(k.fork, k.s0), cudaSuccess);
    }
    ASSERT_EQ(cudaStreamWaitEvent(k.s1, k.fork, 0), cudaSuccess);
    ASSERT_EQ(simt_test::axpb(d_y.get(), d_z.get(), n, 1.f, 0.f, k.s1), cudaSuccess);  // z = y
    ASSERT_EQ(cudaEventRecord(k.join, k.s1), cudaSuccess);
    ASSERT_EQ(cudaStreamWaitEvent(k.s0, k.join, 0), cudaSuccess);
    cudaGraph_t g = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(k.s0, &g), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
    std::set<float> seen;
    for (int launch = 0; launch < 24; ++launch) {
      d_y.upload(old_y);
      ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, k.s0), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(k.s0), cudaSuccess);
      const auto z = d_z.download();
      seen.insert(z[0] == old_y[0] ? 0.f : z[0] == 2.f * x[0] ? 1.f : -1.f);
    }
    if (ordered)
      EXPECT_EQ(seen, std::set<float>{1.f}) << "with the dependency, z always reads the new y";
    else
      EXPECT_EQ(seen, (std::set<float>{0.f, 1.f})) << "without it, some launches read y before the write";
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
    simt::set_checks(checks);
  }
}

// Blas tells a new stream from a destroyed one with the same handle by cudaStreamGetId, which
// no later stream reuses.
TEST(SimtGraphFork, StreamIdsAreNotReused) {
  std::set<unsigned long long> seen;
  for (int i = 0; i < 3; ++i) {
    Streams k;
    for (cudaStream_t s : {k.s0, k.s1}) {
      unsigned long long id = 0;
      ASSERT_EQ(cudaStreamGetId(s, &id), cudaSuccess);
      EXPECT_TRUE(seen.insert(id).second) << id;
    }
  }
  unsigned long long legacy = 0;
  ASSERT_EQ(cudaStreamGetId(0, &legacy), cudaSuccess);
  EXPECT_TRUE(seen.insert(legacy).second);
}

// A GPU refuses cudaStreamGetId on a capturing stream and loses the capture (the H200's driver
// 580 did, where the emulator had answered): Blas asks only eagerly. The emulator refuses the
// call on another stream during a global-mode capture too, as it does the other unsafe calls: a
// stricter answer than any GPU was seen to give.
TEST(SimtGraphFork, StreamIdsAreRefusedInsideACapture) {
  for (const bool same_stream : {true, false}) {
    Streams k;
    unsigned long long before = 0, id = 0;
    ASSERT_EQ(cudaStreamGetId(k.s0, &before), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(k.s0, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_EQ(cudaStreamGetId(same_stream ? k.s0 : k.s1, &id), cudaErrorStreamCaptureUnsupported);
    (void)cudaGetLastError();
    cudaGraph_t g = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(k.s0, &g), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(g, nullptr);
    (void)cudaGetLastError();
    ASSERT_EQ(cudaStreamGetId(k.s0, &id), cudaSuccess) << "after the capture, asked again";
    EXPECT_EQ(id, before);
  }
}

}  // namespace
