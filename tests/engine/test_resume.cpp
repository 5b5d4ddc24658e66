// Resume on the host executor equals the uninterrupted run, bit for bit (test_resume_common.h).
#include "tests/engine/test_resume_common.h"

namespace grpo::test {
namespace {

const MakeExecutor kHost = [](const TrainConfig& c) { return make_host_executor(c); };

TEST(ResumeHost, FromPeriodicCheckpointEqualsUninterrupted) { expect_resume_equals_uninterrupted(kHost, 7, 3, false); }
TEST(ResumeHost, FromInterruptCheckpointEqualsUninterrupted) { expect_resume_equals_uninterrupted(kHost, 6, 4, true); }
TEST(ResumeHost, GrpoFromInterruptCheckpointEqualsUninterrupted) {
  expect_resume_equals_uninterrupted(kHost, 5, 2, true, tiny_grpo_config());
}

}  // namespace
}  // namespace grpo::test
