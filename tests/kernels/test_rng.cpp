// core/rng.h: known answers, the written-out Philox against cuRAND, stream independence, and
// the exact bits-to-number conversions.
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "core/rng.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

void expect_bits(const Bits4& r, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  EXPECT_EQ(r.x, x);
  EXPECT_EQ(r.y, y);
  EXPECT_EQ(r.z, z);
  EXPECT_EQ(r.w, w);
}

// Random123's kat_vectors for philox4x32 with 10 rounds: counter c0..c3, key k0 k1.
TEST(Rng, PhiloxKnownAnswers) {
  expect_bits(philox4x32_10(0, 0, 0, 0, 0, 0), 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  expect_bits(philox4x32_10(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), 0x408f276d,
              0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  expect_bits(philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0), 0xd16cfe09,
              0x94fdcceb, 0x5001e420, 0x24126ea1);
}

// curand_init(0, 0, 0) + curand4 (or the fallback) through the helper: purpose 0 names
// subsequence 0, so this is the all-zero counter and key.
TEST(Rng, Draw4KnownAnswer) {
  expect_bits(draw4(0, static_cast<Purpose>(0), 0, 0, 0, 0), 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
}

// The counter layout documented in rng.h, through the written-out Philox.
Bits4 reference_draw(uint64_t seed, Purpose p, uint32_t epoch, uint32_t step, uint32_t index, uint32_t block) {
  const uint64_t sub = (uint64_t{static_cast<uint32_t>(p)} << 56) | (uint64_t{epoch % (1u << 24)} << 32) | index;
  return philox4x32_10(block, step, static_cast<uint32_t>(sub), static_cast<uint32_t>(sub >> 32),
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Where GRPO_HAVE_CUDA is defined, draw4 runs cuRAND on the host: this is the test that the
// fallback (taken by the host-only flavour and by nvcc's host pass) equals cuRAND bit for bit.
// In the host flavour it checks the layout of the counter.
TEST(Rng, Draw4EqualsWrittenOutPhiloxOnRandomCounters) {
  std::mt19937_64 gen(2024);
  for (int i = 0; i < 5000; ++i) {
    const uint64_t seed = gen();
    const auto p = static_cast<Purpose>(1 + gen() % 6);
    const auto epoch = static_cast<uint32_t>(gen());
    const auto step = static_cast<uint32_t>(gen() % (1u << 30));  // rng.h: steps below 2^30
    const auto index = static_cast<uint32_t>(gen());
    const auto block = static_cast<uint32_t>(i < 100 ? i : gen());
    const Bits4 got = draw4(seed, p, epoch, step, index, block);
    const Bits4 want = reference_draw(seed, p, epoch, step, index, block);
    ASSERT_TRUE(got.x == want.x && got.y == want.y && got.z == want.z && got.w == want.w)
        << "draw " << i << ": seed " << seed << " purpose " << static_cast<uint32_t>(p) << " epoch " << epoch
        << " step " << step << " index " << index << " block " << block;
  }
}

#if defined(GRPO_HAVE_CUDA)
// Consecutive blocks of one stream are consecutive cuRAND outputs: curand4 called again on the
// same state gives block 1 (what a kernel drawing more than 4 words in a loop would see).
TEST(Rng, BlocksAreCuRandConsecutiveOutputs) {
  curandStatePhilox4_32_10_t s;
  const uint64_t seed = 77;
  curand_init(seed, rng_subsequence(Purpose::Spawn, 5, 9), 4 * (uint64_t{3} << 32), &s);
  for (uint32_t b = 0; b < 8; ++b) {
    const uint4 r = curand4(&s);
    const Bits4 d = draw4(seed, Purpose::Spawn, 5, 3, 9, b);
    EXPECT_TRUE(r.x == d.x && r.y == d.y && r.z == d.z && r.w == d.w) << "block " << b;
  }
}
#endif

// Every coordinate of the counter names a distinct stream: the first 64 bits of each draw over a
// grid of coordinates never collide (a collision among ~10^4 random 64-bit values has odds 10^-11).
TEST(Rng, DistinctCoordinatesGiveDistinctStreams) {
  std::set<uint64_t> seen;
  size_t count = 0;
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0x123456789abcdefull}})
    for (uint32_t p = 1; p <= 6; ++p)
      for (uint32_t epoch : {0u, 1u, 2u, 999u, 1000u, (1u << 24) - 1})
        for (uint32_t step : {0u, 1u, 2u, 99u, 1000u})
          for (uint32_t index : {0u, 1u, 31u, 32u, 4097u})
            for (uint32_t block : {0u, 1u}) {
              const Bits4 r = draw4(seed, static_cast<Purpose>(p), epoch, step, index, block);
              seen.insert((uint64_t{r.x} << 32) | r.y);
              ++count;
            }
  EXPECT_EQ(seen.size(), count);
}

// Epochs are taken modulo 2^24 (documented wrap): epoch e and e + 2^24 share a stream.
TEST(Rng, EpochWrapsAfter2Pow24) {
  const Bits4 a = draw4(5, Purpose::Action, 7, 3, 11);
  const Bits4 b = draw4(5, Purpose::Action, 7 + (1u << 24), 3, 11);
  EXPECT_TRUE(a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w);
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// A crude independence check: uniforms drawn over many indices for two streams that differ in
// one coordinate (purpose, epoch, step) are uncorrelated (|r| < 5 sigma = 5 / sqrt(N)), and each
// has the uniform's mean and variance within 5 sigma.
TEST(Rng, NeighbouringStreamsAreUncorrelated) {
  constexpr uint32_t kN = 20000;
  struct Stream {
    Purpose p;
    uint32_t epoch, step;
  };
  const Stream base{Purpose::DropoutRollout, 10, 4};
  const Stream others[] = {
      {Purpose::DropoutLoss, 10, 4}, {Purpose::DropoutRollout, 11, 4}, {Purpose::DropoutRollout, 10, 5}};
  auto draw = [](const Stream& s) {
    std::vector<double> u(kN);
    for (uint32_t i = 0; i < kN; ++i) u[i] = bits_to_uniform(draw4(42, s.p, s.epoch, s.step, i).x);
    return u;
  };
  const auto ub = draw(base);
  for (const Stream& o : others) {
    const auto uo = draw(o);
    EXPECT_LT(std::fabs(correlation(ub, uo)), 5.0 / std::sqrt(double{kN}));
    double mean = 0, var = 0;
    for (double x : uo) mean += x;
    mean /= kN;
    for (double x : uo) var += (x - mean) * (x - mean);
    var /= kN - 1;
    EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / kN));
    EXPECT_NEAR(var, 1.0 / 12, 5 * std::sqrt(1.0 / 180 / kN));  // var of (u-1/2)^2 is 1/180
  }
  // The four words of one draw are not correlated with each other either.
  std::vector<double> x(kN), w(kN);
  for (uint32_t i = 0; i < kN; ++i) {
    const Bits4 r = draw4(42, Purpose::Spawn, 3, 1, i);
    x[i] = bits_to_uniform(r.x);
    w[i] = bits_to_uniform(r.w);
  }
  EXPECT_LT(std::fabs(correlation(x, w)), 5.0 / std::sqrt(double{kN}));
}

TEST(Rng, BitsToUniformIsExactAndInUnitInterval) {
  EXPECT_EQ(bits_to_uniform(0), 0.0f);
  EXPECT_EQ(bits_to_uniform(0xFF), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(bits_to_uniform(0x100), 0x1p-24f);
  EXPECT_EQ(bits_to_uniform(0xFFFFFFFFu), 1.0f - 0x1p-24f);
  EXPECT_LT(bits_to_uniform(0xFFFFFFFFu), 1.0f);
  std::mt19937 gen(7);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t b = gen();
    const float u = bits_to_uniform(b);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(static_cast<double>(u) * 16777216.0, static_cast<double>(b >> 8)) << "bits " << b;
  }
}

TEST(Rng, BitsToIndexIsFloorOfUTimesN) {
  std::mt19937 gen(11);
  std::vector<uint32_t> ns = {
      1, 2, 3, 7, 10, 31, 33, 100, 1000, 4097, (1u << 24) - 1, 1u << 24, (1u << 24) + 1, 1u << 31, 0xFFFFFFFFu};
  for (int i = 0; i < 40; ++i) ns.push_back(1 + gen() % 100000);
  for (int i = 0; i < 10; ++i) ns.push_back(gen() | 1u);
  std::vector<uint32_t> bits = {0, 0xFF, 0x100, 0x7FFFFFFF, 0x80000000u, 0xFFFFFF00u, 0xFFFFFFFFu};
  for (int i = 0; i < 2000; ++i) bits.push_back(gen());
  for (uint32_t n : ns)
    for (uint32_t b : bits) {
      // u * n has at most 24 + 32 significant bits: exact in an x87 long double (64-bit mantissa).
      const long double want = std::floor(static_cast<long double>(bits_to_uniform(b)) * n);
      const uint32_t got = bits_to_index(b, n);
      ASSERT_EQ(static_cast<long double>(got), want) << "bits " << b << " n " << n;
      ASSERT_LT(got, n);
    }
}

}  // namespace
}  // namespace grpo
