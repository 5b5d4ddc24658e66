// The rollout as a WHILE graph node (engine/cuda/rollout_loop_cuda.cpp) against the same rollout run
// eagerly (Ops::rollout's default: one product and one fused step launched per step). From the
// same arena (random parameters, everything else poisoned), a captured rollout's replay must
// leave every byte of the arena as the eager run did, and again on a second replay over a freshly
// poisoned arena (the loop's counter and condition start over at every launch). The loop's body
// holds the two nodes of one step, run T - 1 times; the graph's own node count does not grow with
// T. Fresh parameters each run; the seed is printed on failure.
#include <cstring>
#include <random>
#include <vector>

#include "core/cuda_resources.h"
#include "engine/cuda/ops.h"
#include "engine/step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

struct Outcome {
  std::vector<char> arena;
  size_t top_nodes = 0;  // nodes of the captured graph outside the loop's body
  CudaOps::LoopNodes loop;
};

// Runs one rollout from the arena image `image` and the parameter slabs `slabs`: eagerly, or
// (after an eager warm-up that meets every cuBLAS shape) captured and replayed `replays` times,
// the arena re-uploaded from the image before each replay.
Outcome run_rollout(const TrainConfig& c, const std::vector<char>& image, const std::vector<float>& slabs,
                    bool captured, int replays = 1) {
  DeviceBuffer<float> dev_slabs(slabs);
  DeviceBuffer<char> arena(image);
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads ride the legacy stream
  Blas blas(BlasOptions{c.precision});
  cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
  CudaOps ops(c.game, c.batch_size, blas, stream.get());
  const StepBuffers b = StepBuffers::over(dev_slabs.get(), arena.get(), c);
  const int N = c.games(), H = c.hidden_size;
  if (b.p.fc1_w_bf16) ops.cast_bf16(b.p.fc1_w, b.p.fc1_w_bf16, size_t(H) * H);
  const Ops::Rollout r{b.p,       b.acts,      b.obs, b.actions,   b.rewards, b.games, c.seed, &b.scalars->epoch,
                       c.dropout, c.max_steps, N,     c.obs_dim(), H};
  ops.rollout(r);
  Outcome out;
  if (captured) {
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
    ops.rollout(r);
    CUDA_CHECK(cudaStreamEndCapture(stream.get(), &g));
    cuda::Graph graph(g);
    CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &out.top_nodes));
    out.loop = ops.loop_nodes();
    cudaGraphExec_t e = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    cuda::GraphExec exec(e);
    for (int i = 0; i < replays; ++i) {
      CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      arena.upload(image);
      CUDA_CHECK(cudaDeviceSynchronize());
      if (b.p.fc1_w_bf16) ops.cast_bf16(b.p.fc1_w, b.p.fc1_w_bf16, size_t(H) * H);
      CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.get()));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  out.arena.resize(image.size());
  CUDA_CHECK(cudaMemcpy(out.arena.data(), arena.get(), image.size(), cudaMemcpyDeviceToHost));
  return out;
}

// The parameter slabs: random parameters, the gradients and moments poisoned.
std::vector<float> random_slabs(const TrainConfig& c, uint64_t seed) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  std::vector<float> slabs(4 * pl.total, poison_value());
  const auto w = random_floats(pl.total, seed, -0.3f, 0.3f);
  std::copy(w.begin(), w.end(), slabs.begin());
  return slabs;
}

// The arena: NaN in every float, but the epoch counter.
std::vector<char> poisoned_arena(const TrainConfig& c, uint32_t epoch) {
  const ArenaLayout al(c);
  std::vector<char> image(al.total, char(0xFF));
  std::memcpy(image.data() + al.scalars + offsetof(TrainScalars, epoch), &epoch, sizeof epoch);
  return image;
}

void expect_loop_matches_eager(TrainConfig c) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, " << c.max_steps << " steps, " << precision_name(c.precision));
  c.seed = seed;
  const ArenaLayout al(c);
  const std::vector<float> slabs = random_slabs(c, seed);
  const uint32_t epoch = uint32_t(seed % 1000);
  const std::vector<char> image = poisoned_arena(c, epoch);

  const Outcome eager = run_rollout(c, image, slabs, false);
  const Outcome graph = run_rollout(c, image, slabs, true, 2);
  EXPECT_EQ(graph.loop.nodes, 2u) << "the body: the product and the fused step";
  EXPECT_EQ(graph.loop.runs, 2u * (c.max_steps - 1));
  ASSERT_EQ(graph.arena.size(), eager.arena.size());
  size_t first_diff = eager.arena.size();
  for (size_t i = 0; i < eager.arena.size() && first_diff == eager.arena.size(); ++i)
    if (graph.arena[i] != eager.arena[i]) first_diff = i;
  EXPECT_EQ(first_diff, eager.arena.size())
      << "the replayed rollout differs from the eager one at byte " << first_diff << " of " << eager.arena.size();
  // The rollout ran: every action of every step was written.
  std::vector<int32_t> actions(size_t(c.max_steps) * c.games());
  std::memcpy(actions.data(), eager.arena.data() + al.actions, actions.size() * sizeof(int32_t));
  for (int32_t a : actions) ASSERT_TRUE(a >= 0 && a < kActions) << a;

  // More steps, the same graph outside the loop.
  TrainConfig longer = c;
  longer.max_steps = c.max_steps + 3;
  const Outcome more = run_rollout(longer, poisoned_arena(longer, epoch), slabs, true);
  EXPECT_EQ(more.top_nodes, graph.top_nodes);
  EXPECT_EQ(more.loop.runs, 2u * (longer.max_steps - 1));
}

TEST(RolloutLoopCuda, ReplayEqualsEagerAtARaggedHiddenSize) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 37;  // not a multiple of 4: the kernels' scalar paths
  c.max_steps = 5;
  expect_loop_matches_eager(c);
}

TEST(RolloutLoopCuda, ReplayEqualsEagerInBf16) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 64;
  c.max_steps = 4;
  c.precision = Precision::Bf16;
  expect_loop_matches_eager(c);
}

// Under TF32 the product is cuBLASLt's, which reads fixed pointers: the rollout stays two nodes
// a step, and still equals the eager run.
TEST(RolloutLoopCuda, Tf32KeepsTheUnrolledSteps) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 32;
  c.max_steps = 3;
  c.precision = Precision::Tf32;
  c.seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << c.seed);
  const std::vector<float> slabs = random_slabs(c, c.seed);
  const std::vector<char> image = poisoned_arena(c, 0);
  const Outcome eager = run_rollout(c, image, slabs, false);
  const Outcome graph = run_rollout(c, image, slabs, true);
  EXPECT_EQ(graph.loop.nodes, 0u);
  EXPECT_GE(graph.top_nodes, 2u * c.max_steps);
  EXPECT_TRUE(graph.arena == eager.arena);
}

}  // namespace
}  // namespace grpo::test
