// Resume on the CUDA executor (the emulator in simt; graph replay) equals the uninterrupted run
// on that executor, bit for bit (test_resume_common.h).
#include "tests/engine/test_resume_common.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

const MakeExecutor kCuda = [](const TrainConfig& c) { return make_cuda_executor(c); };

TEST(ResumeCuda, FromPeriodicCheckpointEqualsUninterrupted) {
  GRPO_REQUIRE_DEVICE();
  expect_resume_equals_uninterrupted(kCuda, 4, 2, false);
}
TEST(ResumeCuda, FromInterruptCheckpointEqualsUninterrupted) {
  GRPO_REQUIRE_DEVICE();
  expect_resume_equals_uninterrupted(kCuda, 4, 3, true);
}
TEST(ResumeCuda, GrpoFromPeriodicCheckpointEqualsUninterrupted) {
  GRPO_REQUIRE_DEVICE();
  expect_resume_equals_uninterrupted(kCuda, 4, 2, false, tiny_grpo_config());
}

}  // namespace
}  // namespace grpo::test
