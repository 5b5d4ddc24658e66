// Self-tests of intrinsics.h (compiled with simt.h like any kernel source): bit tricks, casts,
// saturate, min/max overloads, and the float CAS-loop atomicAdd.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

TEST(SimtIntrinsics, Bits) {
  EXPECT_EQ(__popc(0xF0F00001u), 9);
  EXPECT_EQ(__popcll(0xFFFFFFFFFFull), 40);
  EXPECT_EQ(__ffs(0), 0);
  EXPECT_EQ(__ffs(0x50), 5);
  EXPECT_EQ(__clz(0), 32);
  EXPECT_EQ(__clz(0x00010000), 15);
  EXPECT_EQ(__brev(1u), 0x80000000u);
  EXPECT_EQ(__float_as_uint(1.f), 0x3F800000u);
  EXPECT_EQ(__uint_as_float(0xC0000000u), -2.f);
  EXPECT_EQ(__int_as_float(__float_as_int(-3.5f)), -3.5f);
}

TEST(SimtIntrinsics, MathAndMinMax) {
  EXPECT_EQ(__saturatef(-0.5f), 0.f);
  EXPECT_EQ(__saturatef(1.5f), 1.f);
  EXPECT_EQ(__saturatef(std::numeric_limits<float>::quiet_NaN()), 0.f);
  EXPECT_FLOAT_EQ(rsqrtf(4.f), 0.5f);
  EXPECT_FLOAT_EQ(__fdividef(3.f, 4.f), 0.75f);
  EXPECT_EQ(min(3, -4), -4);
  EXPECT_EQ(max(3u, 7u), 7u);
  EXPECT_EQ(min(2.5f, -1.f), -1.f);
  EXPECT_EQ(max(1ll << 40, 3ll), 1ll << 40);
}

TEST(SimtIntrinsics, AtomicsReturnOldValue) {
  float f = 1.5f;
  EXPECT_EQ(atomicAdd(&f, 2.25f), 1.5f);
  EXPECT_EQ(f, 3.75f);
  int i = 5;
  EXPECT_EQ(atomicCAS(&i, 5, 9), 5);
  EXPECT_EQ(atomicCAS(&i, 5, 11), 9);
  EXPECT_EQ(atomicMax(&i, 3), 9);
  EXPECT_EQ(atomicMin(&i, 3), 9);
  EXPECT_EQ(i, 3);
  unsigned u = 0xF0u;
  EXPECT_EQ(atomicOr(&u, 0x0Fu), 0xF0u);
  EXPECT_EQ(atomicAnd(&u, 0x3Cu), 0xFFu);
  EXPECT_EQ(atomicExch(&u, 7u), 0x3Cu);
}

}  // namespace
