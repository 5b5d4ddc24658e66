// Self-tests of the SIMT scheduler: barriers, warp collectives, atomics, shared memory, and the
// planted bugs it must catch (missing barrier, bad warp mask, barrier reached from two places).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
uint64_t seed();
void set_seed(uint64_t s);
bool set_checks(bool on);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;

std::vector<int> random_ints(size_t n, uint64_t seed, int lo, int hi) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// Restores the schedule seed when a test that sets it ends.
// The memory checks off for a scope (they also stop the seeded switches at memory accesses).
struct ChecksOff {
  bool was = simt::set_checks(false);
  ~ChecksOff() { simt::set_checks(was); }
};

struct SeedGuard {
  uint64_t saved = simt::seed();
  ~SeedGuard() { simt::set_seed(saved); }
};

std::vector<float> block_sums_ref(const std::vector<float>& in, int threads, int active) {
  std::vector<float> ref((in.size() + threads - 1) / threads, 0.f);
  for (size_t i = 0; i < in.size(); ++i)
    if (int(i % threads) < active) ref[i / threads] += in[i];
  return ref;
}

TEST(SimtBarrier, BlockReductionWithEarlyExits) {
  const int n = 1000, threads = 96;
  for (int active : {96, 61, 1}) {
    const auto in = grpo::test::random_floats(n, 7 + active);
    DeviceBuffer<float> d_in(in), d_out(grpo::test::poisoned((n + threads - 1) / threads));
    ASSERT_EQ(simt_test::block_sum(d_in.get(), d_out.get(), n, threads, active), cudaSuccess);
    EXPECT_TRUE(grpo::test::all_close(d_out.download(), block_sums_ref(in, threads, active))) << "active " << active;
  }
}

TEST(SimtBarrier, MissingBarrierIsReportedCorrectKernelRunsCleanForAllSeeds) {
  SeedGuard guard;
  const int n = 200, threads = 64;
  const auto in = grpo::test::random_floats(n, 11);
  const auto ref = block_sums_ref(in, threads, threads);
  for (uint64_t s = 1; s <= 8; ++s) {
    simt::set_seed(s);
    DeviceBuffer<float> d_in(in), good(grpo::test::poisoned(ref.size()));
    ASSERT_EQ(simt_test::block_sum(d_in.get(), good.get(), n, threads, threads), cudaSuccess);
    EXPECT_TRUE(grpo::test::all_close(good.download(), ref)) << "correct kernel, seed " << s;
  }
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  // Threads read neighbours' slots that nobody wrote yet, or that others write without a barrier.
  EXPECT_DEATH(
      {
        DeviceBuffer<float> d_in(in);
        DeviceBuffer<float> bad(grpo::test::poisoned(ref.size()));
        simt_test::block_sum_racy(d_in.get(), bad.get(), n, threads);
        cudaDeviceSynchronize();
      },
      "shared memory(.|\n)*block_sum_racy_kernel(.|\n)*SIMT_SEED=");
}

// With no barrier or warp op, threads still switch at instrumented memory accesses (seeded), so
// some thread's two tickets are not consecutive; without the checks nothing switches mid-way.
TEST(SimtScheduler, ThreadsInterleaveMidWayAtMemoryAccesses) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  const int threads = 64;
  auto interleaved = [&] {
    DeviceBuffer<unsigned> counter(std::vector<unsigned>(1, 0u)), first(threads), second(threads);
    EXPECT_EQ(simt_test::tickets(counter.get(), first.get(), second.get(), threads), cudaSuccess);
    const auto a = first.download(), b = second.download();
    int split = 0;
    for (int t = 0; t < threads; ++t) split += b[t] != a[t] + 1;
    return split;
  };
  EXPECT_GT(interleaved(), 0);
  ChecksOff off;
  EXPECT_EQ(interleaved(), 0);
}

TEST(SimtBarrier, BarrierInThreadDependentLoopAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<float> out(64);
        simt_test::barrier_in_ragged_loop(out.get());
        cudaDeviceSynchronize();
      },
      "barrier divergence(.|\n)*SIMT_SEED=");
}

TEST(SimtBarrier, BarrierReachedFromTwoPlacesAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(8);
        simt_test::barrier_two_places(out.get());
        cudaDeviceSynchronize();
      },
      "different places(.|\n)*SIMT_SEED=");
}

// These kernels read shared memory nobody wrote on purpose: the checks, which report exactly
// that, are off while they run.
TEST(SimtSharedMemory, DynamicArenaPoisonedAtEveryBlockStart) {
  ChecksOff off;
  DeviceBuffer<int> out(std::vector<int>(5, -1));
  ASSERT_EQ(simt_test::smem_poison(out.get(), 5, 40), cudaSuccess);
  EXPECT_EQ(out.download(), std::vector<int>(5, 1));
}

TEST(SimtSharedMemory, StaticSharedPoisonedAtEveryBlockStart) {
  ChecksOff off;
  DeviceBuffer<int> out(std::vector<int>(6, -1));
  ASSERT_EQ(simt_test::static_smem_poison(out.get(), 6), cudaSuccess);
  EXPECT_EQ(out.download(), std::vector<int>(6, 1));
}

TEST(SimtSharedMemory, AnAccessPastTheDynamicArenaIsReported) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(33);
        simt_test::smem_past_end(out.get(), 32);
        cudaDeviceSynchronize();
      },
      "out-of-bounds shared memory access: write of 4 bytes at dynamic shared memory \\+ 128, outside the arena "
      "of 128 bytes(.|\n)*smem_past_end_kernel(.|\n)*SIMT_SEED=");
}

TEST(SimtSharedMemory, ReadBeforeAnyWriteIsReported) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(2);
        simt_test::static_smem_poison(out.get(), 2);
        cudaDeviceSynchronize();
      },
      "shared memory read before any thread of this block wrote it(.|\n)*static_smem_poison_kernel");
}

TEST(SimtLaunch, InvalidConfigurationsAreRefused) {
  DeviceBuffer<int> out(64);
  EXPECT_EQ(simt_test::smem_poison(out.get(), 1, 49 << 10), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> in(1025, 1);
  EXPECT_EQ(simt_test::warp_shfl(nullptr, nullptr, 1025, 0, 32), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

// ---- warp collectives against hand-computed results (blocks of 64 threads: two warps) ----
constexpr int kThreads = 64;

TEST(SimtWarp, ShflBroadcastWithWidths) {
  const auto in = random_ints(kThreads, 1, -1000, 1000);
  for (int width : {32, 8, 4}) {
    DeviceBuffer<int> d_in(in), d_out(std::vector<int>(kThreads, -1));
    ASSERT_EQ(simt_test::warp_shfl(d_in.get(), d_out.get(), kThreads, 13, width), cudaSuccess);
    const auto got = d_out.download();
    for (int t = 0; t < kThreads; ++t) {
      const int seg = t & ~(width - 1);  // lane t reads lane 13 mod width of its own segment
      EXPECT_EQ(got[t], in[seg + 13 % width]) << "thread " << t << " width " << width;
    }
  }
}

TEST(SimtWarp, ShflUpDownXor) {
  const auto ints = random_ints(kThreads, 2, -1000, 1000);
  const auto floats = grpo::test::random_floats(kThreads, 3);
  std::vector<double> doubles(kThreads);
  for (int t = 0; t < kThreads; ++t) doubles[t] = 1.0 / (t + 3);
  for (int width : {32, 16}) {
    DeviceBuffer<int> i_in(ints), i_out(std::vector<int>(kThreads, -1));
    DeviceBuffer<float> f_in(floats), f_out(grpo::test::poisoned(kThreads));
    DeviceBuffer<double> d_in(doubles), d_out(std::vector<double>(kThreads, NAN));
    ASSERT_EQ(simt_test::warp_shfl_up(i_in.get(), i_out.get(), kThreads, 3, width), cudaSuccess);
    ASSERT_EQ(simt_test::warp_shfl_down(f_in.get(), f_out.get(), kThreads, 5, width), cudaSuccess);
    ASSERT_EQ(simt_test::warp_shfl_xor(d_in.get(), d_out.get(), kThreads, 6, width), cudaSuccess);
    const auto up = i_out.download();
    const auto down = f_out.download();
    const auto x = d_out.download();
    for (int t = 0; t < kThreads; ++t) {
      const int in_seg = t % width;
      EXPECT_EQ(up[t], in_seg >= 3 ? ints[t - 3] : ints[t]) << t;
      EXPECT_EQ(down[t], in_seg + 5 < width ? floats[t + 5] : floats[t]) << t;
      EXPECT_EQ(x[t], doubles[t ^ 6]) << t;
    }
  }
}

TEST(SimtWarp, VotesOnPartialMask) {
  const unsigned mask = 0x0ff0f0f3u;
  std::vector<int> pred = random_ints(kThreads, 4, 0, 1);
  for (int t = 32; t < kThreads; ++t) pred[t] = ((mask >> (t - 32)) & 1u) ? 1 : 0;  // warp 1: all true
  DeviceBuffer<int> d_pred(pred), any(std::vector<int>(kThreads, -1)), all(std::vector<int>(kThreads, -1));
  DeviceBuffer<unsigned> ballot(std::vector<unsigned>(kThreads, 0xdeadbeefu));
  ASSERT_EQ(simt_test::warp_votes(d_pred.get(), ballot.get(), any.get(), all.get(), kThreads, mask), cudaSuccess);
  const auto b = ballot.download();
  const auto a = any.download();
  const auto l = all.download();
  for (int w = 0; w < 2; ++w) {
    unsigned want = 0;
    for (int j = 0; j < 32; ++j)
      if (((mask >> j) & 1u) && pred[w * 32 + j]) want |= 1u << j;
    for (int j = 0; j < 32; ++j) {
      const int t = w * 32 + j;
      if (!((mask >> j) & 1u)) {
        EXPECT_EQ(b[t], 0xdeadbeefu);
        continue;
      }
      EXPECT_EQ(b[t], want) << t;
      EXPECT_EQ(a[t], want != 0) << t;
      EXPECT_EQ(l[t], want == mask) << t;
    }
  }
  EXPECT_EQ(l[32], 1);
}

TEST(SimtWarp, LaneMissingFromCollectiveAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(32);
        simt_test::warp_missing_lane(out.get(), 17);
        cudaDeviceSynchronize();
      },
      "__shfl_sync(.|\n)*SIMT_SEED=");
}

TEST(SimtWarp, CallerOutsideItsOwnMaskAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(32);
        simt_test::warp_own_lane_not_in_mask(out.get());
        cudaDeviceSynchronize();
      },
      "(mask that does not include its own lane|mismatch)(.|\n)*SIMT_SEED=");
}

TEST(SimtAtomics, ManyBlocks) {
  const int n = 1111, bins = 7;
  const auto values = random_ints(n, 5, 1, 100000);
  DeviceBuffer<int> d_values(values), counts(std::vector<int>(bins, 0)), maxv(std::vector<int>{0});
  DeviceBuffer<unsigned> minv(std::vector<unsigned>{0xffffffffu});
  DeviceBuffer<float> fsum(std::vector<float>{0.f});
  DeviceBuffer<unsigned long long> usum(std::vector<unsigned long long>{0});
  ASSERT_EQ(simt_test::atomics(d_values.get(), n, counts.get(), bins, maxv.get(), minv.get(), fsum.get(), usum.get()),
            cudaSuccess);
  std::vector<int> want_counts(bins, 0);
  for (int i = 0; i < n; ++i) ++want_counts[i % bins];
  EXPECT_EQ(counts.download(), want_counts);
  EXPECT_EQ(maxv.download()[0], *std::max_element(values.begin(), values.end()));
  EXPECT_EQ(minv.download()[0], unsigned(*std::min_element(values.begin(), values.end())));
  EXPECT_EQ(fsum.download()[0], 0.5f * n);  // exact: multiples of 0.5 below 2^24
  EXPECT_EQ(usum.download()[0], std::accumulate(values.begin(), values.end(), 0ull));
}

}  // namespace
