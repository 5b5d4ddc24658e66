// Self-tests of the emulator's split cluster barrier (GRPO_CLUSTER_ARRIVE / GRPO_CLUSTER_WAIT,
// simt/scheduler.cpp and simt/sanitizer.cpp): work between a thread's arrive and its wait that
// touches only its own data runs clean under every seed; an access there that the barrier was
// meant to order is a reported race, within a block too unless a __syncthreads orders it; the
// barrier after the next one orders it; and arriving twice, waiting without arriving or the
// whole barrier in between abort.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
uint64_t seed();
void set_seed(uint64_t s);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;
constexpr int kThreads = 64;

using simt_test::exchange_want;

struct Outputs {
  std::vector<int> out, scratch;
};

Outputs run(int blocks, int cluster, int rounds, int mistake) {
  DeviceBuffer<int> out(std::vector<int>(size_t(rounds) * blocks, -7));
  DeviceBuffer<int> scratch(std::vector<int>(size_t(blocks) * (kThreads + 1), -7));
  EXPECT_EQ(simt_test::cluster_split_exchange(out.get(), scratch.get(), blocks, cluster, rounds, mistake), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return Outputs{out.download(), scratch.download()};
}

TEST(SimtClusterSplit, WorkBetweenArriveAndWaitOnTheThreadsOwnDataRunsCleanUnderEverySeed) {
  const uint64_t saved = simt::seed();
  for (uint64_t s = 1; s <= 6; ++s) {
    simt::set_seed(s);
    for (const auto& [blocks, cluster] : {std::pair{8, 8}, std::pair{12, 3}, std::pair{4, 2}, std::pair{3, 1}}) {
      const int rounds = 3;
      const Outputs r = run(blocks, cluster, rounds, simt_test::kSplitNone);
      EXPECT_EQ(r.out, exchange_want(blocks, cluster, rounds)) << blocks << " blocks, clusters of " << cluster;
      for (int b = 0; b < blocks; ++b) {
        for (int t = 0; t < kThreads; ++t)
          ASSERT_EQ(r.scratch[size_t(b) * kThreads + t], 3 * (rounds - 1) + t) << "block " << b << " thread " << t;
        EXPECT_EQ(r.scratch[size_t(blocks) * kThreads + b], 1) << "block " << b;
      }
    }
  }
  simt::set_seed(saved);
}

TEST(SimtClusterSplit, ABlockBarrierBetweenOrdersTheGapsWriteWithinTheBlock) {
  const Outputs r = run(4, 2, 3, simt_test::kSplitGapWriteSyncthreads);
  EXPECT_EQ(r.out, exchange_want(4, 2, 3));
  for (int b = 0; b < 4; ++b) EXPECT_EQ(r.scratch[size_t(b) * kThreads + 4], 2) << "block " << b;
}

TEST(SimtClusterSplit, TheBarrierAfterTheNextOneOrdersTheGapsWriteForAnotherBlock) {
  const Outputs r = run(4, 2, 2, simt_test::kSplitGlobalTwoBarriers);
  EXPECT_EQ(r.out, exchange_want(4, 2, 2));
  for (int b = 0; b < 4; ++b) EXPECT_EQ(r.scratch[size_t(4) * kThreads + b], 2) << "block " << b;
}

TEST(SimtClusterSplit, AccessesTheBarrierGuardsBetweenArriveAndWaitAreReportedRaces) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  struct Case {
    int mistake;
    const char* report;
  };
  for (const Case c : {Case{simt_test::kSplitLateRemotePost, "data race on distributed shared memory"},
                       Case{simt_test::kSplitGapReadsPost, "data race on distributed shared memory"},
                       Case{simt_test::kSplitGapWriteThenRead, "data race on shared memory"},
                       Case{simt_test::kSplitGlobalOneBarrier, "data race on global memory"}})
    for (uint64_t s = 1; s <= 3; ++s)
      EXPECT_DEATH(
          {
            simt::set_seed(s);
            run(4, 2, 2, c.mistake);
          },
          std::string(c.report) + "(.|\n)*cluster_split_exchange_kernel(.|\n)*SIMT_SEED=")
          << "mistake " << c.mistake << ", seed " << s;
}

TEST(SimtClusterSplit, MisuseAborts) {
  struct Case {
    int what;
    const char* report;
  };
  for (const Case c :
       {Case{simt_test::kSplitArriveTwice, "arrived at the cluster barrier at .* twice without its wait"},
        Case{simt_test::kSplitWaitAlone, "waits at the cluster barrier at .* without having arrived"},
        Case{simt_test::kSplitSyncInGap, "between the arrive and the wait of a split one"}})
    EXPECT_DEATH(
        {
          DeviceBuffer<int> out(2);
          simt_test::cluster_split_misuse(out.get(), c.what);
          cudaDeviceSynchronize();
        },
        std::string(c.report) + "(.|\n)*SIMT_SEED=")
        << "case " << c.what;
}

}  // namespace
