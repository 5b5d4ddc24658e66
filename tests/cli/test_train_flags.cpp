// How `grpo train` and `grpo info` resolve the rollout's way (cli/train_flags.cpp): under
// --precision bf16 the cluster kernel on tensor cores where the shape is the few-row product's,
// unless a flag chose otherwise; the steps in fp32 and TF32. Each case parses a fresh command line into a fresh
// CLI::App.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/train_flags.h"
#include "core/errors.h"

namespace grpo {
namespace {

// The TrainConfig `grpo train ARGS` would run (without --resume).
TrainConfig resolved(std::vector<std::string> args) {
  CLI::App app("train");
  TrainFlags f;
  add_train_flags(app, f);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
  app.parse(args);
  return resolve_train_flags(app, f);
}

TEST(TrainFlags, Bf16TakesTheClusterKernelOnTensorCoresByDefault) {
  const TrainConfig c = resolved({"--preset", "small", "--precision", "bf16"});
  EXPECT_TRUE(c.rollout_cluster_mma);
  EXPECT_FALSE(c.rollout_cluster);
  EXPECT_TRUE(c.cluster_rollout());
}

// The reference's 544 games are not the few-row product's shape: its bf16 rollout keeps the
// steps, with nothing to say about a kernel nobody asked for.
TEST(TrainFlags, Bf16KeepsTheStepsWhereTheClusterKernelCannotTakeTheShape) {
  EXPECT_FALSE(resolved({"--preset", "reference", "--precision", "bf16"}).cluster_rollout());
  EXPECT_FALSE(resolved({"--preset", "small", "--precision", "bf16", "--hidden-size", "16"}).cluster_rollout());
}

TEST(TrainFlags, Fp32AndTf32KeepTheSteps) {
  for (const char* p : {"fp32", "tf32"}) {
    SCOPED_TRACE(p);
    const TrainConfig c = resolved({"--preset", "small", "--precision", p});
    EXPECT_FALSE(c.cluster_rollout());
  }
  EXPECT_FALSE(resolved({"--preset", "small"}).cluster_rollout());
}

TEST(TrainFlags, AFlagChoosesTheRolloutsWayOverTheDefault) {
  EXPECT_FALSE(resolved({"--precision", "bf16", "--no-cluster-rollout"}).cluster_rollout());
  // Either form of --rollout-loop asks for the steps.
  EXPECT_FALSE(resolved({"--preset", "small", "--precision", "bf16", "--rollout-loop"}).cluster_rollout());
  EXPECT_FALSE(resolved({"--preset", "small", "--precision", "bf16", "--no-rollout-loop"}).cluster_rollout());
  const TrainConfig fmaf = resolved({"--precision", "bf16", "--cluster-rollout"});
  EXPECT_TRUE(fmaf.rollout_cluster);
  EXPECT_FALSE(fmaf.rollout_cluster_mma);
  EXPECT_TRUE(resolved({"--precision", "fp32", "--cluster-rollout"}).rollout_cluster);
}

TEST(TrainFlags, NoClusterRolloutExcludesTheClusterFlags) {
  for (const char* flag : {"--cluster-rollout", "--cluster-rollout-mma"}) {
    SCOPED_TRACE(flag);
    EXPECT_THROW(resolved({"--precision", "bf16", "--no-cluster-rollout", flag}), CLI::ExcludesError);
  }
}

}  // namespace
}  // namespace grpo
