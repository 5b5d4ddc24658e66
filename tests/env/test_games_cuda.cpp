// The step and reset kernels against the host executor, bit for bit:
// thousands of random game steps on several configurations, explicit draws, the epoch read from
// device memory under graph replay, and `grpo replay --backend cuda`. Under the SIMT build the
// kernels run on the emulator; on a GPU build they run on the device (skipped without one).
#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "env/games.h"
#include "env/replay.h"
#include "tests/env/replay_fixture.h"
#include "tests/test_util.h"

namespace grpo {
namespace {
using test::DeviceBuffer;

struct Both {
  GameConfig cfg;
  int n;
  std::vector<unsigned char> host_block;
  GamesView host;
  DeviceBuffer<unsigned char> dev_block;
  GamesView dev;
  Both(const GameConfig& c, int games)
      : cfg(c), n(games), host_block(games_state_bytes(c, games)), dev_block(games_state_bytes(c, games)) {
    host = make_games_view(c, n, host_block.data());
    dev = make_games_view(c, n, dev_block.get());
  }
  // Every game's state, field by field (padding between the arrays is never written).
  ::testing::AssertionResult same_state(const char* where, int t) const {
    std::vector<unsigned char> got = dev_block.download();
    const GamesView v = make_games_view(cfg, n, got.data());
    for (int g = 0; g < n; ++g) {
      const GameState a = v.load(g), b = host.load(g);
      if (std::memcmp(&a, &b, sizeof a) != 0)
        return ::testing::AssertionFailure() << where << " t=" << t << ": game " << g << " differs";
    }
    return ::testing::AssertionSuccess();
  }
};

template <class T>
::testing::AssertionResult bitwise(const std::vector<T>& got, const std::vector<T>& want, const char* what, int t) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << what << "[" << i << "] t=" << t << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

void device_matches_host(const GameConfig& c, int R, int T, uint64_t seed) {
  Both b(c, c.groups() * R);
  const size_t D = c.obs_dim();
  const uint32_t epoch = 7;
  DeviceBuffer<uint32_t> d_epoch(std::vector<uint32_t>{epoch});
  DeviceBuffer<float> d_obs(test::poisoned(b.n * D)), d_reward(test::poisoned(b.n));
  DeviceBuffer<int32_t> d_actions(b.n);
  std::vector<float> obs(b.n * D), reward(b.n);
  games_reset_host(c, b.host, R, seed, &epoch, obs.data());
  games_reset_cuda(c, b.dev, R, seed, d_epoch.get(), d_obs.get());
  ASSERT_TRUE(b.same_state("reset", 0));
  ASSERT_TRUE(bitwise(d_obs.download(), obs, "reset obs", 0));
  std::mt19937 gen(uint32_t(seed) + 1);
  std::vector<int32_t> actions(b.n);
  for (int t = 0; t < T; ++t) {
    for (auto& a : actions) a = int32_t(gen() % 3);
    d_actions.upload(actions);
    d_obs.upload(test::poisoned(b.n * D));
    d_reward.upload(test::poisoned(b.n));
    games_step_host(c, b.host, actions.data(), seed, &epoch, uint32_t(t), reward.data(), obs.data());
    games_step_cuda(c, b.dev, d_actions.get(), seed, d_epoch.get(), uint32_t(t), d_reward.get(), d_obs.get());
    ASSERT_TRUE(b.same_state("step", t));
    ASSERT_TRUE(bitwise(d_obs.download(), obs, "obs", t));
    ASSERT_TRUE(bitwise(d_reward.download(), reward, "reward", t));
  }
}

TEST(GamesCuda, DefaultConfigMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  device_matches_host(GameConfig{}, 11, 240, 5);  // 187 games x 240 steps
}

TEST(GamesCuda, ManySlotsTwoPhiloxBlocksMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  device_matches_host(test::config(13, 7, 5, 7, 2, 1), 13, 200, 6);  // 130 games, Fmax 7
}

TEST(GamesCuda, TinyScreenMatchesHost) {
  GRPO_REQUIRE_DEVICE();
  device_matches_host(test::config(4, 2, 1, 1, 1, 0), 61, 150, 7);
}

TEST(GamesCuda, ExplicitDrawsMatchHost) {
  GRPO_REQUIRE_DEVICE();
  const GameConfig c = test::config(17, 9, 3, 4, 1, 2);
  const int R = 9;
  Both b(c, c.groups() * R);
  const size_t D = c.obs_dim(), F = c.max_fruits;
  const uint32_t epoch = 0;
  DeviceBuffer<uint32_t> d_epoch(std::vector<uint32_t>{epoch});
  std::vector<float> obs(b.n * D), reward(b.n);
  DeviceBuffer<float> d_obs(b.n * D), d_reward(b.n), d_coins(b.n);
  DeviceBuffer<int32_t> d_actions(b.n), d_spawn(b.n * F);
  games_reset_host(c, b.host, R, 3, &epoch, obs.data());
  games_reset_cuda(c, b.dev, R, 3, d_epoch.get(), d_obs.get());
  std::mt19937 gen(9);
  std::vector<int32_t> actions(b.n), spawn(b.n * F);
  for (int t = 0; t < 120; ++t) {
    for (auto& a : actions) a = int32_t(gen() % 3);
    for (auto& x : spawn) x = int32_t(gen() % 17);
    const std::vector<float> coins = test::random_floats(b.n, gen(), 0.f, 1.f);
    d_actions.upload(actions);
    d_spawn.upload(spawn);
    d_coins.upload(coins);
    d_obs.upload(test::poisoned(b.n * D));
    games_step_explicit_host(c, b.host, actions.data(), coins.data(), spawn.data(), uint32_t(t), reward.data(),
                             obs.data());
    games_step_explicit_cuda(c, b.dev, d_actions.get(), d_coins.get(), d_spawn.get(), uint32_t(t), d_reward.get(),
                             d_obs.get());
    ASSERT_TRUE(b.same_state("explicit", t));
    ASSERT_TRUE(bitwise(d_obs.download(), obs, "obs", t));
    ASSERT_TRUE(bitwise(d_reward.download(), reward, "reward", t));
  }
}

// A captured reset + steps, replayed for two epochs: the kernels read the epoch from device
// memory, so each replay draws that epoch's numbers (a frozen epoch would repeat epoch 0's).
TEST(GamesCuda, GraphReplayReadsTheEpochFromDeviceMemory) {
  GRPO_REQUIRE_DEVICE();
  const GameConfig c;
  const int R = 3, T = 12;
  Both b(c, c.groups() * R);
  const size_t D = c.obs_dim();
  DeviceBuffer<uint32_t> d_epoch(std::vector<uint32_t>{0});
  DeviceBuffer<float> d_obs(b.n * D), d_reward(b.n * T);
  std::vector<int32_t> actions(b.n);
  std::mt19937 gen(4);
  for (auto& a : actions) a = int32_t(gen() % 3);
  DeviceBuffer<int32_t> d_actions(actions);
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  games_reset_cuda(c, b.dev, R, 77, d_epoch.get(), d_obs.get(), s);
  for (int t = 0; t < T; ++t)
    games_step_cuda(c, b.dev, d_actions.get(), 77, d_epoch.get(), uint32_t(t), d_reward.get() + t * b.n, d_obs.get(),
                    s);
  cudaGraph_t graph;
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<unsigned char> first_state;
  for (uint32_t epoch : {0u, 1u}) {
    d_epoch.upload({epoch});
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> obs(b.n * D), reward(b.n * T);
    games_reset_host(c, b.host, R, 77, &epoch, obs.data());
    for (int t = 0; t < T; ++t)
      games_step_host(c, b.host, actions.data(), 77, &epoch, uint32_t(t), reward.data() + t * b.n, obs.data());
    ASSERT_TRUE(b.same_state("graph", int(epoch)));
    ASSERT_TRUE(bitwise(d_obs.download(), obs, "graph obs", int(epoch)));
    ASSERT_TRUE(bitwise(d_reward.download(), reward, "graph reward", int(epoch)));
    if (epoch == 0) first_state = b.dev_block.download();
  }
  // Epoch 1's final states are not epoch 0's (all 51 games equal by chance: ~0).
  const GamesView v0 = make_games_view(c, b.n, first_state.data());
  int same = 0;
  for (int g = 0; g < b.n; ++g) {
    const GameState x = v0.load(g), y = b.host.load(g);
    same += std::memcmp(&x, &y, sizeof x) == 0;
  }
  EXPECT_LT(same, b.n) << "epoch 1 replayed epoch 0's draws";
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(s));
}

TEST(GamesCuda, ReplayBackendsAgree) {
  GRPO_REQUIRE_DEVICE();
  for (const GameConfig& c : {GameConfig{}, test::config(9, 5, 1, 6, 3, 1)}) {
    const std::string doc = test::random_replay_document(c, 45, 40, 31).dump();
    std::istringstream in_host(doc), in_cuda(doc);
    std::ostringstream out_host, out_cuda;
    run_replay(in_host, out_host, replay_host);
    run_replay(in_cuda, out_cuda, replay_cuda);
    const std::string got = out_cuda.str();
    EXPECT_EQ(got, out_host.str());
    EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 40);
  }
}

}  // namespace
}  // namespace grpo
