// core/launch.h's prefer_l1 on the emulated runtime (compiled with simt.h like any kernel source):
// the carveout it computes, and the emulator's checks and report of the attribute it sets.
#include <gtest/gtest.h>

#include "core/launch.h"

namespace {

__global__ void carveout_probe(int* out) { out[threadIdx.x] = 1; }
__global__ void carveout_other(int* out) { out[threadIdx.x] = 2; }

TEST(LaunchCarveout, PercentHoldsTheBlocksRoundedUp) {
  // The stepwise rollout kernel on an H100 or H200: 9,088 bytes of static shared memory a block,
  // 1 KB reserved, five blocks of the 228 KB an SM has: 50,560 bytes, 21.66%.
  EXPECT_EQ(grpo::l1_carveout_percent(9088, 1024, 5, 228 << 10), 22);
  EXPECT_EQ(grpo::l1_carveout_percent(0, 1024, 5, 228 << 10), 3);
  EXPECT_EQ(grpo::l1_carveout_percent(1000, 0, 4, 4000), 100);            // exactly all of it
  EXPECT_EQ(grpo::l1_carveout_percent(999, 1, 2, 4000), 50);              // exactly half: no rounding up
  EXPECT_EQ(grpo::l1_carveout_percent(1000, 1, 2, 4000), 51);             // a byte past half
  EXPECT_EQ(grpo::l1_carveout_percent(100 << 10, 0, 3, 228 << 10), 100);  // more than the SM has
  EXPECT_EQ(grpo::l1_carveout_percent(1024, 1024, 0, 228 << 10), 0);
  EXPECT_EQ(grpo::l1_carveout_percent(1024, 1024, 5, 0), 100);  // a device that says nothing
}

TEST(LaunchCarveout, PreferL1SetsTheKernelsHintOnly) {
  const void* probe = reinterpret_cast<const void*>(&carveout_probe);
  const void* other = reinterpret_cast<const void*>(&carveout_other);
  cudaFuncAttributes f{};
  ASSERT_EQ(cudaFuncGetAttributes(&f, probe), cudaSuccess);
  EXPECT_EQ(f.preferredShmemCarveout, -1);  // the device's default until asked
  int reserved = 0, per_sm = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), cudaSuccess);
  EXPECT_EQ(reserved, 1024);
  grpo::prefer_l1(probe, 7);
  ASSERT_EQ(cudaFuncGetAttributes(&f, probe), cudaSuccess);
  // The emulator attributes no static shared memory to a kernel (sharedSizeBytes 0).
  EXPECT_EQ(f.preferredShmemCarveout,
            grpo::l1_carveout_percent(f.sharedSizeBytes, size_t(reserved), 7, size_t(per_sm)));
  EXPECT_GT(f.preferredShmemCarveout, 0);
  ASSERT_EQ(cudaFuncGetAttributes(&f, other), cudaSuccess);
  EXPECT_EQ(f.preferredShmemCarveout, -1);
}

TEST(LaunchCarveout, TheRuntimeRefusesAPercentOutOfRange) {
  const void* other = reinterpret_cast<const void*>(&carveout_other);
  EXPECT_EQ(cudaFuncSetAttribute(other, cudaFuncAttributePreferredSharedMemoryCarveout, 101), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(other, cudaFuncAttributePreferredSharedMemoryCarveout, -2), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(other, cudaFuncAttributePreferredSharedMemoryCarveout, 100), cudaSuccess);
  cudaFuncAttributes f{};
  ASSERT_EQ(cudaFuncGetAttributes(&f, other), cudaSuccess);
  EXPECT_EQ(f.preferredShmemCarveout, 100);
  ASSERT_EQ(cudaFuncSetAttribute(other, cudaFuncAttributePreferredSharedMemoryCarveout, -1), cudaSuccess);
  ASSERT_EQ(cudaFuncGetAttributes(&f, other), cudaSuccess);
  EXPECT_EQ(f.preferredShmemCarveout, -1);
}

}  // namespace
