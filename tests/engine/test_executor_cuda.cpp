// The CUDA executor's state transfers and graph capture: set_state is ordered before the next
// epoch's kernels (the executor's stream is non-blocking), and capture_graph never captures
// before a warm-up epoch has met every cuBLAS shape eagerly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "engine/cuda/rollout_step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

// A fresh executor given the state after epoch 0, then one epoch, ends where an uninterrupted
// two-epoch run ends, bit for bit, with the same metrics for epoch 1.
TEST(ExecutorCuda, SetStateThenOneEpochContinuesTheRun) {
  GRPO_REQUIRE_DEVICE();
  const TrainConfig c = tiny_config();
  std::vector<TrainScalars> straight_m;
  auto straight = make_cuda_executor(c);
  const RunState two = run_epochs(c, *straight, 2, &straight_m);
  auto first = make_cuda_executor(c);
  const RunState one = run_epochs(c, *first, 1);
  ASSERT_EQ(one.scalars.epoch, 1u);

  auto resumed = make_cuda_executor(c);
  resumed->set_state(one);
  resumed->launch_epoch();
  const TrainScalars m = resumed->wait_metrics(1);
  const RunState got = resumed->get_state();
  EXPECT_EQ(got.scalars.epoch, 2u);
  EXPECT_TRUE(bitwise_equal(got, two)) << "the first epoch after set_state did not start from the given state";
  ASSERT_EQ(straight_m.size(), 2u);
  EXPECT_EQ(0, std::memcmp(&m, &straight_m[1], sizeof m));
}

// capture_graph on an executor that has run nothing warms up first and leaves the run where it
// was: the captured graph then runs the same epochs as an eager executor.
TEST(ExecutorCuda, CaptureGraphOnAFreshExecutorWarmsUpAndKeepsTheState) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.use_graph = true;
  auto graph = make_cuda_executor(c);
  const RunState start = initial_state(c);
  graph->set_state(start);
  EXPECT_GT(graph->capture_graph().nodes, 20u);
  EXPECT_TRUE(bitwise_equal(graph->get_state(), start)) << "the warm-up epoch changed the run";
  const RunState g = run_epochs(c, *graph, 3);
  c.use_graph = false;
  auto eager = make_cuda_executor(c);
  EXPECT_TRUE(bitwise_equal(g, run_epochs(c, *eager, 3)));
}

// `grpo info --graph` captures on a fresh executor of the configuration it was given.
TEST(ExecutorCuda, InfoGraphCapturesAfterAWarmUp) {
  GRPO_REQUIRE_DEVICE();
  const std::string cmd =
      std::string(GRPO_BINARY_DIR) + "/grpo info --graph --hidden-size 8 --batch-size 1 --max-steps 2 2>&1";
  std::string out;
  EXPECT_EQ(command_output(cmd, out), 0) << out;
  EXPECT_NE(out.find("graph nodes        "), std::string::npos) << out;
  EXPECT_EQ(out.find("graph nodes        n/a"), std::string::npos) << out;
}

// At hidden 32 the rollout's product takes the few-row kernel: by default the graph holds its
// steps unrolled, as many nodes as runs; --rollout-loop holds them as one WHILE node, whose body
// of kRolloutLoopStepsPerTrip steps runs once here (--no-rollout-loop is the default again);
// --cluster-rollout makes the six steps one kernel node, in place of the loop's memset, WHILE node
// and last step.
TEST(ExecutorCuda, InfoGraphCountsTheRolloutLoopAndItsSwitches) {
  GRPO_REQUIRE_DEVICE();
  const auto sizes = [](const std::string& extra) {
    const std::string cmd = std::string(GRPO_BINARY_DIR) +
                            "/grpo info --graph --hidden-size 32 --batch-size 1 --max-steps 6 " + extra + " 2>&1";
    std::string out;
    EXPECT_EQ(command_output(cmd, out), 0) << out;
    unsigned long nodes = 0, runs = 0;
    const size_t at = out.find("graph nodes");
    EXPECT_NE(at, std::string::npos) << out;
    const size_t semi = out.find(';', at);
    if (at == std::string::npos || semi == std::string::npos) return std::pair{nodes, runs};
    nodes = std::stoul(out.substr(at + 11));
    runs = std::stoul(out.substr(semi + 1));
    return std::pair{nodes, runs};
  };
  const auto [loop_nodes, loop_runs] = sizes("--rollout-loop");
  const auto [flat_nodes, flat_runs] = sizes("");
  EXPECT_EQ(sizes("--no-rollout-loop"), std::pair(flat_nodes, flat_runs));
  const unsigned long body = 2 * kRolloutLoopStepsPerTrip;  // five steps looped: one trip
  EXPECT_EQ(loop_runs, loop_nodes) << "a body of " << body << " nodes, one trip";
  EXPECT_EQ(flat_nodes, flat_runs);
  EXPECT_EQ(flat_nodes, loop_runs - 2 - (body - 2 * 5))
      << "unrolled: no memset of the counters, no WHILE node, no surplus steps";
  const auto [cluster_nodes, cluster_runs] = sizes("--cluster-rollout");
  EXPECT_EQ(cluster_nodes, cluster_runs);
  EXPECT_EQ(cluster_nodes, loop_nodes - body - 3) << "the loop's count holds its body's nodes";
}

// capture_graph counts the top level's nodes by kind, the loop body's apart: with the rollout as a
// WHILE node one conditional node and its counters' memset, unrolled none; kernels either way.
TEST(ExecutorCuda, GraphSizeCountsTheNodesByKind) {
  GRPO_REQUIRE_DEVICE();
  for (const bool loop : {false, true}) {
    SCOPED_TRACE(loop ? "--rollout-loop" : "unrolled");
    TrainConfig c = tiny_config();
    c.use_graph = true;
    c.hidden_size = 32;
    c.batch_size = 1;
    c.max_steps = 6;
    c.rollout_loop = loop;
    auto ex = make_cuda_executor(c);
    ex->set_state(initial_state(c));
    const Executor::GraphSize s = ex->capture_graph();
    const size_t top = s.kernels + s.memsets + s.memcpys + s.conditionals + s.other;
    EXPECT_EQ(s.conditionals, loop ? 1u : 0u);
    EXPECT_EQ(s.nodes - top, loop ? size_t(2 * kRolloutLoopStepsPerTrip) : 0u) << "the body's nodes";
    EXPECT_GT(s.kernels, 2u * 5u) << "the unrolled or last steps, the loss pass and the update";
    if (loop) {
      EXPECT_GE(s.memsets, 1u) << "the loop's counters";
    }
  }
}

// Every kernel of the epoch follows the kernel before it programmatically (core/launch.h's
// launch_overlapped and launch_cluster_overlapped, core/grid_dependency.cuh), so a graph has each
// next kernel resident and waiting before the one before it ends: every edge from a kernel node
// to a kernel node of ours is programmatic, in the WHILE loop's body too. On a GPU the products
// are cuBLAS's kernel nodes, which the library launches: the edges into them are the only
// ordinary ones, and there are fewer of them than of ours. The emulator's products are host
// nodes, not kernels, so the edges around them are not counted there.
TEST(ExecutorCuda, EveryKernelFollowsTheKernelBeforeItProgrammatically) {
  GRPO_REQUIRE_DEVICE();
  enum class Rollout { Steps, Loop, Cluster };
  for (const Rollout rollout : {Rollout::Steps, Rollout::Loop, Rollout::Cluster})
    for (const Algo algo : {Algo::Reference, Algo::Grpo}) {
      SCOPED_TRACE(std::string(rollout == Rollout::Steps  ? "steps unrolled"
                               : rollout == Rollout::Loop ? "WHILE loop"
                                                          : "cluster rollout") +
                   (algo == Algo::Grpo ? ", grpo" : ", reference"));
      TrainConfig c = algo == Algo::Grpo ? tiny_grpo_config() : tiny_config();
      c.use_graph = true;
      c.hidden_size = 32;  // the few-row product and the cluster kernel's smallest width
      c.rollout_loop = rollout == Rollout::Loop;
      c.rollout_cluster = rollout == Rollout::Cluster;
      auto ex = make_cuda_executor(c);
      ex->set_state(initial_state(c));
      const Executor::GraphSize s = ex->capture_graph();
      const size_t graphs = 1 + s.conditionals;  // the top level and the loop's body
      EXPECT_EQ(s.conditionals, rollout == Rollout::Loop ? 1u : 0u);
      EXPECT_EQ(s.edges, s.nodes - graphs) << "one stream: a chain in each graph";
      EXPECT_GT(s.kernel_edges, 10u) << "the rollout, the loss pass and the update";
      EXPECT_EQ(s.programmatic, s.kernel_edges - s.into_library) << "every edge into a kernel of ours";
      EXPECT_EQ(s.programmatic_into_library, 0u) << "a programmatic edge into a kernel not taken for ours";
      EXPECT_LT(s.into_library, s.kernel_edges / 2) << "the products are the fewer kernels";
#if !GRPO_GPU
      EXPECT_EQ(s.into_library, 0u) << "the emulator's products are host nodes";
#endif
    }
}

// The run says whether --cluster-rollout was taken, and why not where the shape is not the
// kernel's: fewer than 32 columns, or TF32 (whose product stays on cuBLASLt).
TEST(ExecutorCuda, InfoSaysWhetherTheClusterRolloutIsTaken) {
  GRPO_REQUIRE_DEVICE();
  const auto info = [](const std::string& flags) {
    const std::string cmd = std::string(GRPO_BINARY_DIR) + "/grpo info --graph --batch-size 1 --max-steps 2 " + flags +
                            " --cluster-rollout 2>&1";
    std::string out;
    EXPECT_EQ(command_output(cmd, out), 0) << out;
    return out;
  };
  EXPECT_NE(info("--hidden-size 32").find(", cluster rollout)"), std::string::npos);
  const std::string narrow = info("--hidden-size 20");
  EXPECT_NE(narrow.find("the cluster rollout not taken: 17 games at hidden 20"), std::string::npos) << narrow;
  const std::string tf32 = info("--hidden-size 32 --precision tf32");
  EXPECT_NE(tf32.find("the cluster rollout not taken: TF32"), std::string::npos) << tf32;
  const std::string mma = info("--hidden-size 32 --precision bf16 --cluster-rollout-mma");
  EXPECT_NE(mma.find(", bf16, cluster rollout on tensor cores)"), std::string::npos) << mma;
  // --rollout-streams beside it: not where the cluster kernel runs the rollout, else the ranges.
  const std::string both = info("--hidden-size 32 --rollout-streams 2");
  EXPECT_NE(both.find(", --rollout-streams not taken: the cluster kernel runs the whole rollout)"), std::string::npos)
      << both;
  const std::string streams = info("--hidden-size 20 --rollout-streams 3");
  EXPECT_NE(streams.find("not taken: 17 games at hidden 20 (it takes 1-256 games, hidden 32-1024), the rollout's games "
                         "on 3 streams)"),
            std::string::npos)
      << streams;
}

// Under --precision bf16 a fresh `grpo train` takes the cluster kernel on tensor cores unless told
// not to; fp32 keeps the steps. A resumed run keeps its checkpoint's way unless a flag chooses
// one, so that it goes on bit for bit.
TEST(ExecutorCuda, Bf16RunsTakeTheClusterKernelOnTensorCoresByDefault) {
  GRPO_REQUIRE_DEVICE();
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("grpo_rollout_default_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto train = [&](const std::string& flags) {
    const std::string cmd = std::string(GRPO_BINARY_DIR) + "/grpo train --backend cuda --batch-size 1 --max-steps 2 " +
                            "--hidden-size 32 --total-epochs 1 --patience 0 " + flags + " 2>&1";
    std::string out;
    EXPECT_EQ(command_output(cmd, out), 0) << out;
    const size_t at = out.find("grpo train: ");  // the line that names the executor (the emulator may speak first)
    return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
  };
  const std::string taken = ", bf16, cluster rollout on tensor cores)";
  EXPECT_NE(train("--precision bf16 --out " + (root / "bf16").string()).find(taken), std::string::npos);
  EXPECT_EQ(train("--precision bf16 --no-cluster-rollout --out " + (root / "off").string()).find("cluster"),
            std::string::npos);
  EXPECT_EQ(train("--out " + (root / "fp32").string()).find("cluster"), std::string::npos);
  const std::string ckpt = (root / "bf16" / "final.safetensors").string();
  EXPECT_NE(train("--resume " + ckpt + " --total-epochs 2 --out " + (root / "resumed").string()).find(taken),
            std::string::npos);
  EXPECT_EQ(
      train("--resume " + ckpt + " --total-epochs 2 --no-cluster-rollout --out " + (root / "resumed_off").string())
          .find("cluster"),
      std::string::npos);
  const std::string steps = (root / "off" / "final.safetensors").string();
  EXPECT_EQ(train("--resume " + steps + " --total-epochs 2 --out " + (root / "steps_resumed").string()).find("cluster"),
            std::string::npos);
  EXPECT_NE(
      train("--resume " + steps + " --total-epochs 2 --cluster-rollout-mma --out " + (root / "steps_mma").string())
          .find(taken),
      std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace grpo::test
