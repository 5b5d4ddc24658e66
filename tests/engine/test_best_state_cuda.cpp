// The best-state snapshot on the CUDA executor, graph replays included (test_best_state_common.h).
#include "tests/engine/test_best_state_common.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

const auto kCuda = [](const TrainConfig& c) { return make_cuda_executor(c); };

TEST(BestStateCuda, IsTheStateThatPlayedTheBestEpoch) {
  GRPO_REQUIRE_DEVICE();
  expect_best_state_is_the_best_epochs(kCuda, tiny_config(), 6);
}
TEST(BestStateCuda, GrpoIsTheStateThatPlayedTheBestEpoch) {
  GRPO_REQUIRE_DEVICE();
  expect_best_state_is_the_best_epochs(kCuda, tiny_grpo_config(), 4);
}

}  // namespace
}  // namespace grpo::test
