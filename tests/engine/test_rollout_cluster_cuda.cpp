// The rollout as one kernel of thread-block clusters (engine/cuda/rollout_cluster.cu) against the
// same rollout step by step (Ops::rollout's default on CudaOps: the few-row product and the fused
// step launched per step, whose host twins the other tests hold it to). From the same arena
// (random parameters, everything else poisoned) the cluster kernel must leave every byte of the
// arena as the stepwise run did: with one cluster (blocks playing several games each), a few, or
// as many as the device's SMs give, at ragged and even widths, in fp32 and bf16, eagerly and
// replayed from a graph twice. Fresh parameters each run; the seed is printed on failure.
// With the product on bf16 tensor cores the emulator's arena is still the steps' byte for byte;
// a GPU's sums round their own way, so there every action must agree and a1 within a few units
// in the last place of its terms.
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/cuda/rollout_cluster.h"
#include "engine/policy.h"
#include "tests/engine/rollout_arena_util.h"

#if defined(GRPO_SIMT)
namespace simt {
uint64_t mma_products();
}
#endif

namespace grpo::test {
namespace {

// The cluster kernel with `clusters` clusters (0: the executor's choice), after the same start
// as Ops::rollout's.
RolloutRun cluster_run(const GameConfig& game, unsigned clusters, ClusterProduct product = ClusterProduct::Fma,
                       ClusterWait wait = ClusterWait::Suspend) {
  return [game, clusters, product, wait](CudaOps& ops, const Ops::Rollout& r, cudaStream_t stream) {
    ops.rollout_start(r);
    rollout_cluster_cuda(game, rollout_step_at(r, 0), r.T, stream, product, clusters, {}, wait);
  };
}

template <class T>
std::vector<T> region(const std::vector<char>& arena, size_t offset, size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), arena.data() + offset, n * sizeof(T));
  return v;
}

// `got` is the stepwise arena `want`: byte for byte, or, for the tensor cores on a GPU, the same
// actions and a1 within 1e-4 (relative, or absolute below 1): two fp32 sums of the same 64 or
// fewer exact bf16 products differ by a few units in the last place; a fragment in the wrong
// place is off by a whole term, ~0.1-1 here.
void expect_same_rollout(const TrainConfig& c, ClusterProduct product, const std::vector<char>& want,
                         const std::vector<char>& got, const char* what) {
#if !defined(GRPO_SIMT)
  if (product == ClusterProduct::TensorCores) {
    const ArenaLayout al(c);
    const size_t rows = size_t(c.max_steps) * c.games(), n = rows * c.hidden_size;
    EXPECT_EQ(region<int32_t>(got, al.actions, rows), region<int32_t>(want, al.actions, rows)) << what;
    const std::vector<float> a = region<float>(got, al.a1, n), b = region<float>(want, al.a1, n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_NEAR(a[i], b[i], 1e-4 * (1.0 + std::fabs(b[i])))
          << what << ": a1 row " << i / c.hidden_size << " column " << i % c.hidden_size;
    return;
  }
#else
  (void)c, (void)product;
#endif
  EXPECT_EQ(first_difference(want, got), want.size()) << what << ", of " << want.size();
}

// The emulator counts its tensor-core products: where the bits cannot tell the two products
// apart, the count says which one ran. A GPU has no such count (0 and 0).
uint64_t tensor_core_products() {
#if defined(GRPO_SIMT)
  return simt::mma_products();
#else
  return 0;
#endif
}
void expect_took(ClusterProduct product, uint64_t before, const char* what) {
#if defined(GRPO_SIMT)
  if (product == ClusterProduct::TensorCores)
    EXPECT_GT(tensor_core_products(), before) << what << ": no tensor-core product ran";
  else
    EXPECT_EQ(tensor_core_products(), before) << what << ": the fmaf product ran tensor-core products";
#else
  (void)product, (void)before, (void)what;
#endif
}

// scoring: the rollout must also catch and miss fruits before its last step (a reward past 0.5,
// and one below 0), so that every counter of the games' states changes while they stay on chip.
// wait: how the eager runs' blocks wait at their mailboxes (the replay waits as the executor does).
void expect_cluster_matches_steps(TrainConfig c, std::vector<unsigned> clusters,
                                  ClusterProduct product = ClusterProduct::Fma, bool scoring = false,
                                  ClusterWait wait = ClusterWait::Suspend) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, " << c.max_steps << " steps, " << precision_name(c.precision)
                                    << (product == ClusterProduct::TensorCores ? ", tensor cores" : ""));
  c.seed = seed;
  const ArenaLayout al(c);
  const std::vector<float> slabs = random_slabs(c, seed);
  const std::vector<char> image = poisoned_arena(c, uint32_t(seed % 1000));
  ASSERT_TRUE(rollout_cluster_fits(c.games(), c.hidden_size, c.obs_dim(), c.precision == Precision::Bf16, product));

  const Outcome steps = run_rollout(c, image, slabs, false);
  // The rollout ran: every action of every step was written.
  std::vector<int32_t> actions(size_t(c.max_steps) * c.games());
  std::memcpy(actions.data(), steps.arena.data() + al.actions, actions.size() * sizeof(int32_t));
  for (int32_t a : actions) ASSERT_TRUE(a >= 0 && a < kActions) << a;
  if (scoring) {
    const size_t N = size_t(c.games());
    const std::vector<float> rewards = region<float>(steps.arena, al.rewards, size_t(c.max_steps) * N);
    bool caught = false, missed = false;
    for (size_t i = N; i + N < rewards.size(); ++i) caught |= rewards[i] > 0.5f, missed |= rewards[i] < 0.f;
    ASSERT_TRUE(caught && missed) << "no catch or no miss before the last step: the test would not see the counters";
  }

  for (unsigned k : clusters) {
    SCOPED_TRACE(::testing::Message() << k << " clusters (0: one block per SM)");
    const uint64_t products = tensor_core_products();
    const Outcome eager = run_rollout(c, image, slabs, false, 1, cluster_run(c.game, k, product, wait));
    expect_same_rollout(c, product, steps.arena, eager.arena, "eager");
    expect_took(product, products, "eager");
  }
  // Through the executor's ops, captured: one node after games_reset and the trunk, replayed twice.
  c.rollout_cluster = true;
  c.rollout_cluster_mma = product == ClusterProduct::TensorCores;
  const uint64_t products = tensor_core_products();
  const Outcome graph = run_rollout(c, image, slabs, true, 2);
  expect_same_rollout(c, product, steps.arena, graph.arena, "replayed");
  expect_took(product, products, "replayed");
  EXPECT_EQ(graph.loop.nodes, 0u) << "no WHILE node";
  expect_same_without_h0(c, graph.arena, run_rollout(c, image, slabs, true, 1, nullptr, false).arena,
                         "replayed without h0");
  // The steps' graph as a loop: games_reset and the trunk, then the WHILE node and its counters'
  // memset and the last step's two nodes (one step: its two nodes); here the one kernel.
  c.rollout_cluster = c.rollout_cluster_mma = false;
  c.rollout_loop = true;
  const Outcome stepwise_graph = run_rollout(c, image, slabs, true, 1);
  EXPECT_EQ(graph.top_nodes, stepwise_graph.top_nodes - (c.max_steps >= 2 ? 3 : 1));
}

// tiny_config's game at hidden H, `batch` groups' games and `steps` steps.
TrainConfig shape(int H, int batch, int steps, Precision precision = Precision::Fp32) {
  TrainConfig c = tiny_config();
  c.hidden_size = H;
  c.batch_size = batch;
  c.max_steps = steps;
  c.precision = precision;
  return c;
}

TEST(RolloutClusterCuda, EqualsTheStepsAtARaggedWidth) {
  GRPO_REQUIRE_DEVICE();
  // 15 games; 5 columns a block but 2 in the last; no float4 paths
  expect_cluster_matches_steps(shape(37, 5, 4), {1, 4, 0});
}

TEST(RolloutClusterCuda, EqualsTheStepsInBf16) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(64, 4, 3, Precision::Bf16), {1, 5, 0});  // 12 games
}

// The product on bf16 tensor cores: one 16-row tile (12 games), and at a ragged width two tiles
// of rows (18 games in one cluster), 5 columns a block (2 in the last), k's last pair half past H.
TEST(RolloutClusterCuda, TensorCoreProductEqualsTheSteps) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(64, 4, 3, Precision::Bf16), {1, 5, 0}, ClusterProduct::TensorCores);
}

// The mailboxes' waits by mbarrier.test_wait in a loop (bench_rollout_cuda's "spin waits"): the
// same run. On the emulator only the argument's way through is checked (its wait is one way).
TEST(RolloutClusterCuda, SpinningWaitsEqualTheSteps) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(64, 4, 3, Precision::Bf16), {1, 0}, ClusterProduct::TensorCores, false,
                               ClusterWait::Spin);
  expect_cluster_matches_steps(shape(37, 5, 4), {4}, ClusterProduct::Fma, false, ClusterWait::Spin);
}

TEST(RolloutClusterCuda, TensorCoreProductAtARaggedWidth) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(37, 6, 3, Precision::Bf16), {1, 2, 0}, ClusterProduct::TensorCores);
}

// The tensor-core product sums four tiles of k at once (kernels/few_rows.h's order): at the small
// preset's width each warp's four chains run whole tiles, the loop without tests, the first two
// from the fragments of W1 the warp holds in registers (HeldW1, from H 512); at 300 the third
// tile is partial (44 k, its last step half past H) and the fourth chain has none, and nothing is
// held; at 640 a group of four whole tiles, then a group with one, and warp 0's second m-tile
// (columns 64..79) from shared memory. At 512 with 12 games in one cluster (two tiles of rows),
// a warp's items mix its held m-tile with others: only warp 0's first item takes them.
TEST(RolloutClusterCuda, TensorCoreProductOverWholeAndPartialTilesOfK) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(512, 1, 2, Precision::Bf16), {0}, ClusterProduct::TensorCores);
  expect_cluster_matches_steps(shape(512, 4, 2, Precision::Bf16), {1}, ClusterProduct::TensorCores);
  expect_cluster_matches_steps(shape(300, 1, 2, Precision::Bf16), {0}, ClusterProduct::TensorCores);
  expect_cluster_matches_steps(shape(640, 1, 2, Precision::Bf16), {0}, ClusterProduct::TensorCores);
}

// Rows long and many enough that a thread stages them in several batches of 8-byte chunks (24
// h1 rows of 128 chunks: three batches of 8 rows; 32 rows of W1 a block: four) on one cluster.
TEST(RolloutClusterCuda, EqualsTheStepsWhenRowsTakeSeveralBatches) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(256, 8, 2), {1});  // 24 games
}

// The fmaf product takes a thread's rows R at a time, R a compile-time count: at the small
// preset's width (64 columns a block, two sets of threads a column) 18 games in one cluster give
// R 8 then 1, in two clusters 5 and 4 (the small preset's 9 and 8 games a cluster). One step runs
// the product once.
TEST(RolloutClusterCuda, FmaProductAtEachRowCount) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(512, 6, 1), {1, 2});
}

// Long enough that fruits reach the bottom row (tiny_config's screen is 6 high) while the states
// stay on chip: the game played ahead and taken by warp 0's lanes, a word a lane, must carry every
// counter (score, bottomed, caught) from step to step, as thread 0's step does in the stepwise run.
TEST(RolloutClusterCuda, GamesScoreWhileTheirStatesStayOnChip) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(64, 2, 16, Precision::Bf16), {1, 0}, ClusterProduct::TensorCores, true);
  expect_cluster_matches_steps(shape(64, 3, 16), {1}, ClusterProduct::Fma, true);  // 12 games: a block plays two
}

// Past 512 columns a thread of the step has a second group, whose h0 the cluster kernel (one
// group kept) computes again.
TEST(RolloutClusterCuda, EqualsTheStepsPastOneGroupAThread) {
  GRPO_REQUIRE_DEVICE();
  expect_cluster_matches_steps(shape(520, 1, 2, Precision::Bf16), {0});
}

TEST(RolloutClusterCuda, OneStepAndOneGame) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 32;
  c.game.screen_width = 4;  // one group of one game
  c.batch_size = 1;
  c.max_steps = 1;
  ASSERT_EQ(c.games(), 1);
  expect_cluster_matches_steps(c, {1, 0});
}

// What timing decides (the mailboxes' phases, a block's buffers written for the next step while
// another block may still read them): the same launch from the same arena, run again and again,
// must leave the same bytes every time, on tensor cores too. On a GPU 20 launches each way at the
// small preset's shape (136 games at hidden 512; in fp32 blocks that play two games) and at small
// ones (a ragged width, fewer games than blocks, one step); on the emulator, whose schedule its
// seed draws, twice at small shapes.
TEST(RolloutClusterCuda, RepeatedLaunchesLeaveTheSameBytes) {
  GRPO_REQUIRE_DEVICE();
  struct Case {
    TrainConfig c;
    ClusterProduct product;
    unsigned clusters;
  };
#if defined(GRPO_SIMT)
  constexpr int kRuns = 2;
  const Case cases[] = {{shape(64, 4, 3, Precision::Bf16), ClusterProduct::TensorCores, 0},
                        {shape(37, 5, 4), ClusterProduct::Fma, 1}};
#else
  constexpr int kRuns = 20;
  TrainConfig small;
  small.hidden_size = 512, small.batch_size = 8, small.max_steps = 16;
  TrainConfig small_bf16 = small;
  small_bf16.precision = Precision::Bf16;
  const Case cases[] = {{small_bf16, ClusterProduct::TensorCores, 0},
                        {small, ClusterProduct::Fma, 0},
                        {shape(37, 5, 4), ClusterProduct::Fma, 0},                           // any H, uneven columns
                        {shape(37, 2, 1, Precision::Bf16), ClusterProduct::TensorCores, 0},  // 6 games, 8 blocks
                        {shape(100, 2, 3, Precision::Bf16), ClusterProduct::Fma, 1}};
#endif
  for (Case k : cases) {
    const uint64_t seed = std::random_device{}();
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << k.c.hidden_size << ", " << k.c.games()
                                      << " games, " << precision_name(k.c.precision));
    k.c.seed = seed;
    const std::vector<float> slabs = random_slabs(k.c, seed);
    const std::vector<char> image = poisoned_arena(k.c, uint32_t(seed % 1000));
    const RolloutRun run = cluster_run(k.c.game, k.clusters, k.product);
    const Outcome first = run_rollout(k.c, image, slabs, false, 1, run);
    for (int i = 1; i < kRuns; ++i)
      ASSERT_EQ(first_difference(first.arena, run_rollout(k.c, image, slabs, false, 1, run).arena), first.arena.size())
          << "launch " << i << " of " << kRuns;
  }
}

// Shapes the few-row product does not take (fewer than 32 columns, more than 256 games) are not
// the cluster kernel's: the executor keeps the steps, a direct call throws.
TEST(RolloutClusterCuda, RefusesShapesOutsideTheFewRowProduct) {
  GRPO_REQUIRE_DEVICE();
  EXPECT_FALSE(rollout_cluster_fits(6, 20, 10, false));
  EXPECT_FALSE(rollout_cluster_fits(257, 64, 10, true));
  EXPECT_TRUE(rollout_cluster_fits(136, 512, 10, false));
  EXPECT_TRUE(rollout_cluster_fits(136, 512, 10, true));
  EXPECT_TRUE(rollout_cluster_fits(136, 512, 10, true, ClusterProduct::TensorCores));
  EXPECT_FALSE(rollout_cluster_fits(136, 512, 10, false, ClusterProduct::TensorCores)) << "tensor cores take bf16 only";
  EXPECT_FALSE(rollout_cluster_fits(136, 4096, 10, true)) << "a block's share of W1 would not fit in shared memory";
  TrainConfig c = tiny_config();  // hidden 20
  const std::vector<float> slabs = random_slabs(c, 3);
  EXPECT_THROW(run_rollout(c, poisoned_arena(c, 0), slabs, false, 1, cluster_run(c.game, 0)), std::invalid_argument);
  c.hidden_size = 64;  // a shape it takes, but fp32 operands for the tensor cores
  const std::vector<float> wide = random_slabs(c, 4);
  EXPECT_THROW(
      run_rollout(c, poisoned_arena(c, 0), wide, false, 1, cluster_run(c.game, 0, ClusterProduct::TensorCores)),
      std::invalid_argument);
}

}  // namespace
}  // namespace grpo::test
