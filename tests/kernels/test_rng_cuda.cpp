// The device draws the same bits as the host: rng_fill_cuda vs rng_fill_host over a grid of
// counters (on a GPU this is cuRAND on the device against cuRAND compiled by g++).
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/rng_check.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

TEST(RngCuda, DeviceBitsEqualHostBits) {
  GRPO_REQUIRE_DEVICE();
  std::mt19937_64 gen(99);
  struct Case {
    Purpose p;
    uint32_t n_step, n_index, n_block;
  };
  for (const Case c :
       {Case{Purpose::Spawn, 3, 37, 5}, Case{Purpose::DropoutLoss, 1, 131, 3}, Case{Purpose::Action, 7, 1, 1}}) {
    const uint64_t seed = gen();
    const auto epoch = static_cast<uint32_t>(gen());
    const size_t words = rng_fill_words(c.n_step, c.n_index, c.n_block);
    std::vector<uint32_t> want(words);
    rng_fill_host(want.data(), seed, c.p, epoch, c.n_step, c.n_index, c.n_block);
    test::DeviceBuffer<uint32_t> out(std::vector<uint32_t>(words, 0xDEADBEEFu));  // poisoned
    rng_fill_cuda(out.get(), seed, c.p, epoch, c.n_step, c.n_index, c.n_block, nullptr);
    const auto got = out.download();
    for (size_t i = 0; i < words; ++i) ASSERT_EQ(got[i], want[i]) << "word " << i << " of " << words;
  }
}

}  // namespace
}  // namespace grpo
