// Self-tests of the emulator's thread-block clusters (simt/scheduler.cpp): blocks of a cluster
// wait for each other at the cluster barrier and keep their own shared memory, the barrier orders
// their global memory accesses for the checks, a missing barrier is reported, misuse aborts, a
// graph replays a cluster launch, and bad cluster sizes are refused. Distributed shared memory:
// an exchange through the blocks' arenas, a missing barrier reported as a race, misuse reported.
#include <gtest/gtest.h>

#include <vector>

#include "tests/simt/self_test_kernels.h"
#include "tests/test_util.h"

namespace simt {
uint64_t seed();
void set_seed(uint64_t s);
}  // namespace simt

namespace {

using grpo::test::DeviceBuffer;

using simt_test::exchange_want;

TEST(SimtCluster, BlocksOfAClusterExchangeThroughTheBarrierUnderEverySeed) {
  const uint64_t saved = simt::seed();
  for (uint64_t s = 1; s <= 6; ++s) {
    simt::set_seed(s);
    for (const auto& [blocks, cluster] : {std::pair{8, 8}, std::pair{12, 3}, std::pair{6, 1}, std::pair{4, 2}}) {
      const int rounds = 3;
      DeviceBuffer<int> slots(std::vector<int>(size_t(blocks), -1)), out(std::vector<int>(size_t(rounds) * blocks, -1));
      ASSERT_EQ(simt_test::cluster_exchange(slots.get(), out.get(), blocks, cluster, rounds, true), cudaSuccess);
      EXPECT_EQ(out.download(), exchange_want(blocks, cluster, rounds))
          << blocks << " blocks in clusters of " << cluster << ", seed " << s;
    }
  }
  simt::set_seed(saved);
}

TEST(SimtCluster, AMissingClusterBarrierIsAReportedRace) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  EXPECT_DEATH(
      {
        DeviceBuffer<int> slots(8);
        DeviceBuffer<int> out(24);
        simt_test::cluster_exchange(slots.get(), out.get(), 8, 4, 3, false);
        cudaDeviceSynchronize();
      },
      "data race on global memory(.|\n)*cluster_exchange_kernel(.|\n)*SIMT_SEED=");
}

// Distributed shared memory: the same exchange through the blocks' own arenas.
TEST(SimtCluster, BlocksOfAClusterExchangeThroughEachOthersSharedMemory) {
  const uint64_t saved = simt::seed();
  for (uint64_t s = 1; s <= 6; ++s) {
    simt::set_seed(s);
    for (const auto& [blocks, cluster] : {std::pair{8, 8}, std::pair{12, 3}, std::pair{4, 2}, std::pair{3, 1}}) {
      const int rounds = 3;
      DeviceBuffer<int> out(std::vector<int>(size_t(rounds) * blocks, -1));
      ASSERT_EQ(simt_test::cluster_dsmem_exchange(out.get(), blocks, cluster, rounds, true), cudaSuccess);
      EXPECT_EQ(out.download(), exchange_want(blocks, cluster, rounds))
          << blocks << " blocks in clusters of " << cluster << ", seed " << s;
    }
  }
  simt::set_seed(saved);
}

TEST(SimtCluster, AMissingClusterBarrierBeforeARemoteWriteIsAReportedRace) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(24);
        simt_test::cluster_dsmem_exchange(out.get(), 8, 4, 3, false);
        cudaDeviceSynchronize();
      },
      "data race on distributed shared memory(.|\n)*cluster_dsmem_exchange_kernel(.|\n)*SIMT_SEED=");
}

TEST(SimtCluster, RemoteSharedMemoryMisuseIsReported) {
  struct Case {
    int what;
    const char* report;
    bool checks;  // reported by the memory checks (not in an ASan build), else by the scheduler
  };
  for (const Case c : {Case{0, "distributed shared memory access to a block that has exited", true},
                       Case{1,
                            "out-of-bounds distributed shared memory access: write of 4 bytes at the dynamic "
                            "shared memory of block \\(1,0,0\\) \\+ 16",
                            true},
                       Case{2, "map_shared_rank of an address outside this block's dynamic shared memory", false},
                       Case{3, "map_shared_rank to rank 2 of a cluster of 2 blocks", false},
                       Case{4, "distributed shared memory access before the cluster's first barrier", true}}) {
    if (c.checks && !GRPO_SIMT_INSTRUMENTED) continue;
    EXPECT_DEATH(
        {
          DeviceBuffer<int> out(2);
          simt_test::cluster_dsmem_misuse(out.get(), c.what);
          cudaDeviceSynchronize();
        },
        std::string(c.report) + "(.|\n)*SIMT_SEED=")
        << "case " << c.what;
  }
}

// The owner exits in the phase in which another block writes into its shared memory: reported
// whichever of the two runs first (the seeds shuffle the blocks' order within the phase).
TEST(SimtCluster, AnOwnerExitingBesideARemoteWriteIsReportedInEitherOrder) {
  if (!GRPO_SIMT_INSTRUMENTED) GTEST_SKIP() << "built without the memory checks' instrumentation (an ASan build)";
  const uint64_t saved = simt::seed();
  for (uint64_t s = 1; s <= 8; ++s) {
    EXPECT_DEATH(
        {
          simt::set_seed(s);
          DeviceBuffer<int> out(2);
          simt_test::cluster_dsmem_misuse(out.get(), 5);
          cudaDeviceSynchronize();
        },
        "(distributed shared memory access to a block that has exited|a block exited while another block of its "
        "cluster accessed its shared memory with no cluster barrier between)(.|\n)*SIMT_SEED=")
        << "seed " << s;
  }
  simt::set_seed(saved);
}

TEST(SimtCluster, ABarrierReachedFromTwoPlacesAborts) {
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(4);
        simt_test::cluster_two_places(out.get());
        cudaDeviceSynchronize();
      },
      "cluster barrier reached from different places(.|\n)*SIMT_SEED=");
}

TEST(SimtCluster, ClusterAndBlockBarriersMixedInOneBlockDeadlock) {
  EXPECT_DEATH(
      {
        DeviceBuffer<int> out(2);
        simt_test::cluster_or_block_barrier(out.get());
        cudaDeviceSynchronize();
      },
      "deadlock: threads of a block wait at the cluster barrier while others wait elsewhere(.|\n)*SIMT_SEED=");
}

TEST(SimtCluster, AGraphReplaysTheClusterLaunch) {
  const int blocks = 8, cluster = 4, rounds = 2;
  DeviceBuffer<int> slots(std::vector<int>(size_t(blocks), -1)), out(std::vector<int>(size_t(rounds) * blocks, -1));
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(simt_test::cluster_exchange(slots.get(), out.get(), blocks, cluster, rounds, true, s), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  // The poisoned uploads are pageable copies on the legacy stream, which `s` does not wait for.
  ASSERT_EQ(cudaStreamSynchronize(0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out.download(), exchange_want(blocks, cluster, rounds));
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// The emulated H100 holds clusters within its GPCs (18, 18 and six of 16 SMs): 16 clusters of 8
// blocks that need a whole SM's shared memory each, not 132 / 8; 48 when three blocks share an SM.
TEST(SimtCluster, OccupancyCountsClustersPerGpc) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 8;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(64);
  config.blockDim = dim3(128);
  config.attrs = &attr;
  config.numAttrs = 1;
  const void* f = reinterpret_cast<const void*>(&cudaDeviceSynchronize);  // any function: limits are per function
  ASSERT_EQ(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10), cudaSuccess);
  int n = -1;
  config.dynamicSmemBytes = 150 << 10;
  ASSERT_EQ(cudaOccupancyMaxActiveClusters(&n, f, &config), cudaSuccess);
  EXPECT_EQ(n, 16);
  config.dynamicSmemBytes = 70 << 10;
  ASSERT_EQ(cudaOccupancyMaxActiveClusters(&n, f, &config), cudaSuccess);
  EXPECT_EQ(n, 48);
  config.dynamicSmemBytes = 210 << 10;  // above the function's limit
  EXPECT_EQ(cudaOccupancyMaxActiveClusters(&n, f, &config), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  attr.val.clusterDim.x = 16;
  config.dynamicSmemBytes = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveClusters(&n, f, &config), cudaErrorInvalidClusterSize);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidClusterSize);
}

TEST(SimtCluster, BadClusterSizesAreRefused) {
  DeviceBuffer<int> slots(16), out(16);
  for (const auto& [blocks, cluster] : {std::pair{4, 3}, std::pair{16, 16}, std::pair{4, 0}}) {
    EXPECT_EQ(simt_test::cluster_exchange(slots.get(), out.get(), blocks, cluster, 1, true),
              cudaErrorInvalidClusterSize)
        << blocks << " blocks, clusters of " << cluster;
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidClusterSize);
  }
  int v = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrClusterLaunch, 0), cudaSuccess);
  EXPECT_EQ(v, 1);
}

}  // namespace
