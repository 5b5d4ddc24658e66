// The rollout on several streams (engine/cuda/rollout_streams_cuda.cpp) against the same rollout
// on one. Where the product is the few-row kernel, whose every element is one fmaf chain whatever
// the rows around it, the games' ranges on their own streams must leave every byte of the arena
// as one stream does, eagerly and replayed (the emulator replays a graph's nodes in an order drawn
// from the seed, so a range's work left unordered after the fork or before the join shows as a
// difference). Where the product is cuBLASLt's, a range's product is another shape, which may
// sum in another order: there the replay must equal the eager run of the same split. Fresh
// parameters each run; the seed is printed on failure.
#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "tests/engine/rollout_arena_util.h"

namespace grpo::test {
namespace {

struct Split {
  TrainConfig c;
  std::vector<float> slabs;
  std::vector<char> image;
};

Split split_case(TrainConfig c) {
  c.seed = std::random_device{}();
  return Split{c, random_slabs(c, c.seed), poisoned_arena(c, uint32_t(c.seed % 1000))};
}

void expect_actions_written(const TrainConfig& c, const std::vector<char>& arena) {
  const ArenaLayout al(c);
  std::vector<int32_t> actions(size_t(c.samples()));
  std::memcpy(actions.data(), arena.data() + al.actions, actions.size() * sizeof(int32_t));
  for (int32_t a : actions) ASSERT_TRUE(a >= 0 && a < kActions) << a;
}

void expect_streams_equal_one(TrainConfig base) {
  const Split s = split_case(base);
  SCOPED_TRACE(::testing::Message() << "seed " << s.c.seed << ", hidden " << s.c.hidden_size << ", " << s.c.games()
                                    << " games, " << precision_name(s.c.precision));
  const Outcome one = run_rollout(s.c, s.image, s.slabs, false);
  expect_actions_written(s.c, one.arena);
  const Outcome one_graph = run_rollout(s.c, s.image, s.slabs, true);
  for (int k : {2, 3}) {
    TrainConfig c = s.c;
    c.rollout_streams = k;
    SCOPED_TRACE(::testing::Message() << k << " streams");
    const Outcome eager = run_rollout(c, s.image, s.slabs, false);
    EXPECT_EQ(first_difference(one.arena, eager.arena), one.arena.size()) << "eager";
    std::vector<std::vector<char>> replays;
    const Outcome graph = run_rollout(c, s.image, s.slabs, true, 3, nullptr, true, &replays);
    ASSERT_EQ(replays.size(), 3u);
    for (size_t i = 0; i < replays.size(); ++i)
      EXPECT_EQ(first_difference(one.arena, replays[i]), one.arena.size()) << "replay " << i;
    // Each step is a product and a fused step per range; the fork and join are edges.
    EXPECT_EQ(graph.top_nodes, one_graph.top_nodes + size_t(k - 1) * 2 * size_t(c.max_steps));
  }
}

TEST(RolloutStreamsCuda, EqualOneStreamWithTheFewRowProduct) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 37;  // the few-row kernel from 32; not a multiple of 4: the scalar paths
  c.batch_size = 3;    // 9 games: ranges of 4 and 5, then 3, 3 and 3
  c.max_steps = 5;
  expect_streams_equal_one(c);
}

TEST(RolloutStreamsCuda, EqualOneStreamInBf16) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 64;
  c.batch_size = 5;  // 15 games: 7 and 8, then 5, 5 and 5
  c.max_steps = 3;
  c.precision = Precision::Bf16;
  expect_streams_equal_one(c);
}

// cuBLASLt's product (hidden 20 is under the few-row kernel's 32 columns): the split's replays
// equal its eager run; with 4 streams for 3 games (batch 1), one game a stream on 3 of them.
TEST(RolloutStreamsCuda, ReplayEqualsEagerWithCublasLtProducts) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();  // hidden 20, 3 groups
  c.max_steps = 4;
  for (const auto& [k, batch] : {std::pair{2, 2}, std::pair{4, 1}}) {
    c.rollout_streams = k;
    c.batch_size = batch;
    const Split s = split_case(c);
    SCOPED_TRACE(::testing::Message() << "seed " << s.c.seed << ", " << k << " streams, " << c.games() << " games");
    const Outcome eager = run_rollout(s.c, s.image, s.slabs, false);
    expect_actions_written(s.c, eager.arena);
    std::vector<std::vector<char>> replays;
    const Outcome graph = run_rollout(s.c, s.image, s.slabs, true, 2, nullptr, true, &replays);
    for (size_t i = 0; i < replays.size(); ++i)
      EXPECT_EQ(first_difference(eager.arena, replays[i]), eager.arena.size()) << "replay " << i;
    const size_t streams = size_t(std::min(k, c.games()));
    TrainConfig one = s.c;
    one.rollout_streams = 1;
    EXPECT_EQ(graph.top_nodes,
              run_rollout(one, s.image, s.slabs, true).top_nodes + (streams - 1) * 2 * size_t(c.max_steps))
        << "a product and a step a step for each stream that has games";
  }
}

TEST(RolloutStreamsCuda, StreamCountsOutsideOneToFourAreRefused) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  Blas blas(BlasOptions{c.precision});
  cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
  CudaOps ops(c.game, c.batch_size, blas, stream.get());
  EXPECT_THROW(ops.set_rollout_streams(0), std::invalid_argument);
  EXPECT_THROW(ops.set_rollout_streams(CudaOps::kMaxRolloutStreams + 1), std::invalid_argument);
  c.rollout_streams = 5;
  EXPECT_THROW(c.validate(), UsageError);
}

}  // namespace
}  // namespace grpo::test
