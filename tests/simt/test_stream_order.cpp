// Self-tests of the emulated runtime's eager streams: work waits in a queue per stream and, at a
// synchronisation point, the next node is drawn among the streams' ready heads. So two streams'
// work that nothing orders runs in either order under some draw, work ordered by an event or by
// the legacy stream's rules never runs out of order, and synchronising one stream runs what it
// needs, not necessarily the rest. The tests race on purpose, so with the memory checks off: with
// them on, a kernel that touches what another stream's kernel touched, unordered, is reported
// (tests/simt/planted/streams_no_wait.cu).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
bool set_checks(bool on);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;

// The memory checks off for a scope, or (off false) left as they are.
struct ChecksOff {
  explicit ChecksOff(bool off = true) : was(simt::set_checks(true)) { simt::set_checks(was && !off); }
  ~ChecksOff() { simt::set_checks(was); }
  bool was;
};

constexpr int kTrials = 48;  // draws per question: each order shows with probability 1 - 2^-47

// A synchronous copy from pageable memory lands later on the legacy stream, which non-blocking
// streams do not wait for: synchronise before they read it.
void reset(DeviceBuffer<float>& d, const std::vector<float>& v) {
  d.upload(v);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

struct TwoStreams {
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t e = nullptr;
  explicit TwoStreams(unsigned flags = cudaStreamNonBlocking) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&a, flags), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&b, flags), cudaSuccess);
    EXPECT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  }
  ~TwoStreams() {
    cudaEventDestroy(e);
    cudaStreamDestroy(b);
    cudaStreamDestroy(a);
  }
};

// Stream a writes y = 2x + 1; stream b then computes z = y - 1 (waiting for a's event when
// `wait`); returns how many of the trials saw b run before a (z from the poisoned y). With the
// wait, the memory checks stay on: streams ordered by an event are no race.
int trials_where_b_ran_first(bool wait) {
  const ChecksOff off(!wait);
  const int n = 33;
  const auto x = grpo::test::random_floats(n, 7);
  DeviceBuffer<float> d_x(x), d_y(n), d_z(n);
  TwoStreams s;
  int early = 0;
  for (int t = 0; t < kTrials; ++t) {
    reset(d_y, grpo::test::poisoned(n));
    EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 1.f, s.a), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(s.e, s.a), cudaSuccess);
    if (wait) {
      EXPECT_EQ(cudaStreamWaitEvent(s.b, s.e, 0), cudaSuccess);
    }
    EXPECT_EQ(simt_test::axpb(d_y.get(), d_z.get(), n, 1.f, -1.f, s.b), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto z = d_z.download();
    bool poisoned = false, right = true;
    for (int i = 0; i < n; ++i) {
      poisoned |= std::isnan(z[i]);
      right &= z[i] == (2.f * x[i] + 1.f) - 1.f;
    }
    EXPECT_TRUE(poisoned || right) << "trial " << t;
    early += poisoned;
  }
  return early;
}

TEST(SimtStreamOrder, UnorderedStreamsRunInEitherOrder) {
  const int early = trials_where_b_ran_first(false);
  EXPECT_GT(early, 0) << "stream b never ran before stream a: the queues run in submission order";
  EXPECT_LT(early, kTrials) << "stream b always ran first";
}

TEST(SimtStreamOrder, AnEventWaitOrdersTheStreams) { EXPECT_EQ(trials_where_b_ran_first(true), 0); }

// A wait takes the event's record at the time of the call: recording it again later on a stream
// that has not run yet does not hold the waiting stream back.
TEST(SimtStreamOrder, AWaitTakesTheRecordMadeBeforeIt) {
  const ChecksOff off;
  const int n = 16;
  DeviceBuffer<float> d_x(std::vector<float>(n, 1.f)), d_y(n), d_z(n), d_w(n);
  TwoStreams s;
  int z_before_w = 0;
  for (int t = 0; t < kTrials; ++t) {
    reset(d_y, grpo::test::poisoned(n));
    reset(d_w, grpo::test::poisoned(n));
    EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 1.f, 1.f, s.a), cudaSuccess);  // y = 2
    EXPECT_EQ(cudaEventRecord(s.e, s.a), cudaSuccess);
    EXPECT_EQ(cudaStreamWaitEvent(s.b, s.e, 0), cudaSuccess);
    EXPECT_EQ(simt_test::axpb(d_y.get(), d_w.get(), n, 1.f, 0.f, s.a), cudaSuccess);  // w = y, after the record
    EXPECT_EQ(cudaEventRecord(s.e, s.a), cudaSuccess);
    EXPECT_EQ(simt_test::axpb(d_w.get(), d_z.get(), n, 0.f, 3.f, s.b), cudaSuccess);  // z = 3, reads w
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    // z is 3 whether or not w was written (0 * NaN is NaN: then z shows that b ran before w).
    z_before_w += std::isnan(d_z.download()[0]);
    EXPECT_EQ(d_w.download(), std::vector<float>(n, 2.f));
  }
  EXPECT_GT(z_before_w, 0) << "the second record held the waiting stream back";
}

// The legacy stream waits for blocking streams' earlier work and they for its; a non-blocking
// stream waits for neither.
TEST(SimtStreamOrder, TheLegacyStreamOrdersBlockingStreamsOnly) {
  const ChecksOff off;
  const int n = 21;
  const auto x = grpo::test::random_floats(n, 9);
  DeviceBuffer<float> d_x(x), d_y(n), d_z(n);
  for (const unsigned flags : {unsigned(cudaStreamDefault), unsigned(cudaStreamNonBlocking)}) {
    TwoStreams s(flags);
    int early = 0;
    for (int t = 0; t < kTrials; ++t) {
      reset(d_y, grpo::test::poisoned(n));
      EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 0.f, s.a), cudaSuccess);  // y = 2x on a
      EXPECT_EQ(simt_test::axpb(d_y.get(), d_z.get(), n, 1.f, 0.f, 0), cudaSuccess);    // z = y on legacy
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      early += std::isnan(d_z.download()[0]);
    }
    if (flags == cudaStreamDefault) {
      EXPECT_EQ(early, 0) << "the legacy stream ran before a blocking stream's earlier work";
    } else {
      EXPECT_GT(early, 0) << "the legacy stream always waited for a non-blocking stream";
    }
  }
}

// A blocking stream waits for the legacy stream's earlier work.
TEST(SimtStreamOrder, BlockingStreamsWaitForEarlierLegacyWork) {
  const int n = 19;
  const auto x = grpo::test::random_floats(n, 13);
  DeviceBuffer<float> d_x(x), d_y(n), d_z(n);
  TwoStreams blocking(cudaStreamDefault);
  for (int t = 0; t < kTrials; ++t) {
    reset(d_y, grpo::test::poisoned(n));
    EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 3.f, 0.f, 0), cudaSuccess);           // y = 3x, legacy
    EXPECT_EQ(simt_test::axpb(d_y.get(), d_z.get(), n, 1.f, 1.f, blocking.a), cudaSuccess);  // z = y + 1
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto z = d_z.download();
    for (int i = 0; i < n; ++i) ASSERT_EQ(z[i], 3.f * x[i] + 1.f) << "trial " << t << ", " << i;
  }
}

// A cudaStreamWaitEvent on a blocking stream with no work after it is still work of that stream
// for the legacy stream's rules: a synchronous copy (the legacy stream) waits for it, so for the
// event's record, so for the non-blocking stream's kernel before the record.
TEST(SimtStreamOrder, AWaitWithNothingAfterItOrdersTheLegacyStream) {
  const int n = 23;
  const auto x = grpo::test::random_floats(n, 17);
  DeviceBuffer<float> d_x(x), d_y(n);
  TwoStreams blocking(cudaStreamDefault), non_blocking;
  std::vector<float> got(n);
  for (int t = 0; t < kTrials; ++t) {
    reset(d_y, grpo::test::poisoned(n));
    EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 3.f, 0.f, non_blocking.a), cudaSuccess);  // y = 3x
    EXPECT_EQ(cudaEventRecord(non_blocking.e, non_blocking.a), cudaSuccess);
    EXPECT_EQ(cudaStreamWaitEvent(blocking.a, non_blocking.e, 0), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(got.data(), d_y.get(), n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.f * x[i]) << "trial " << t << ", " << i;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Synchronising stream a runs a's work (and what it waits for); stream b's may still be queued,
// as on a GPU, where b may not have run yet. The host sees b's write only after b's sync.
TEST(SimtStreamOrder, SynchronisingAStreamNeedNotRunTheOthers) {
  const int n = 8;
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 2 * n * sizeof(float)), cudaSuccess);
  DeviceBuffer<float> d_x(std::vector<float>(n, 1.f));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  TwoStreams s;
  int b_pending = 0;
  for (int t = 0; t < kTrials; ++t) {
    for (int i = 0; i < 2 * n; ++i) pinned[i] = -1.f;
    EXPECT_EQ(simt_test::axpb(d_x.get(), pinned + n, n, 4.f, 0.f, s.b), cudaSuccess);
    EXPECT_EQ(simt_test::axpb(d_x.get(), pinned, n, 3.f, 0.f, s.a), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s.a), cudaSuccess);
    EXPECT_EQ(pinned[0], 3.f);
    b_pending += pinned[n] == -1.f;
    EXPECT_EQ(cudaStreamSynchronize(s.b), cudaSuccess);
    EXPECT_EQ(pinned[n], 4.f);
  }
  EXPECT_GT(b_pending, 0) << "a stream's sync always ran the other stream's work too";
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// cudaEventSynchronize runs until the event's record has run: the work before it on its stream,
// and what that stream waited for.
TEST(SimtStreamOrder, AnEventSyncRunsWhatTheRecordFollows) {
  const int n = 8;
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, n * sizeof(float)), cudaSuccess);
  DeviceBuffer<float> d_x(std::vector<float>(n, 1.f)), d_y(n);
  TwoStreams s;
  cudaEvent_t done;
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  for (int t = 0; t < kTrials; ++t) {
    for (int i = 0; i < n; ++i) pinned[i] = -1.f;
    reset(d_y, grpo::test::poisoned(n));
    EXPECT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 5.f, 0.f, s.a), cudaSuccess);  // y = 5
    EXPECT_EQ(cudaEventRecord(s.e, s.a), cudaSuccess);
    EXPECT_EQ(cudaStreamWaitEvent(s.b, s.e, 0), cudaSuccess);
    EXPECT_EQ(simt_test::axpb(d_y.get(), pinned, n, 2.f, 0.f, s.b), cudaSuccess);  // pinned = 2y
    EXPECT_EQ(cudaEventRecord(done, s.b), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(done), cudaSuccess);
    EXPECT_EQ(pinned[n - 1], 10.f) << "trial " << t;
  }
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

// An event recorded again on another stream: its first record running says nothing about the
// event, which stays not ready (cudaEventElapsedTime) until the last record has run.
TEST(SimtStreamOrder, ARecordSupersededByALaterOneLeavesTheEventAlone) {
  const int n = 8;
  DeviceBuffer<float> d_x(std::vector<float>(n, 1.f)), d_y(n), d_z(n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  TwoStreams s;
  cudaEvent_t start, e;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  int second_pending = 0;
  for (int t = 0; t < kTrials; ++t) {
    ASSERT_EQ(cudaEventRecord(start, s.a), cudaSuccess);
    ASSERT_EQ(simt_test::axpb(d_x.get(), d_y.get(), n, 2.f, 0.f, s.a), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e, s.a), cudaSuccess);
    ASSERT_EQ(simt_test::axpb(d_x.get(), d_z.get(), n, 3.f, 0.f, s.b), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e, s.b), cudaSuccess);  // e now stands for this record
    ASSERT_EQ(cudaStreamSynchronize(s.a), cudaSuccess);
    float ms = 0.f;
    const cudaError_t got = cudaEventElapsedTime(&ms, start, e);
    if (got == cudaErrorNotReady) {
      ++second_pending;
      (void)cudaGetLastError();
    } else {
      EXPECT_EQ(got, cudaSuccess);
    }
    ASSERT_EQ(cudaStreamSynchronize(s.b), cudaSuccess);
    EXPECT_EQ(cudaEventElapsedTime(&ms, start, e), cudaSuccess) << "trial " << t;
  }
  EXPECT_GT(second_pending, 0) << "the first record, run, made the event ready while the second was queued";
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
}

// A stream destroyed with work queued: the work still runs (cudaStreamDestroy returns at once and
// the GPU finishes the stream's work).
TEST(SimtStreamOrder, ADestroyedStreamsQueuedWorkStillRuns) {
  const int n = 8;
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, n * sizeof(float)), cudaSuccess);
  for (int i = 0; i < n; ++i) pinned[i] = -1.f;
  DeviceBuffer<float> d_x(std::vector<float>(n, 1.f));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(simt_test::axpb(d_x.get(), pinned, n, 6.f, 0.f, s), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(pinned[0], -1.f) << "nothing ran yet";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < n; ++i) EXPECT_EQ(pinned[i], 6.f) << i;
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
}

}  // namespace
