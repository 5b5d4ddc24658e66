// The best-state snapshot on the host executor (test_best_state_common.h).
#include "tests/engine/test_best_state_common.h"

namespace grpo::test {
namespace {

const auto kHost = [](const TrainConfig& c) { return make_host_executor(c); };

TEST(BestStateHost, IsTheStateThatPlayedTheBestEpoch) { expect_best_state_is_the_best_epochs(kHost, tiny_config(), 9); }
TEST(BestStateHost, GrpoIsTheStateThatPlayedTheBestEpoch) {
  expect_best_state_is_the_best_epochs(kHost, tiny_grpo_config(), 6);
}

}  // namespace
}  // namespace grpo::test
