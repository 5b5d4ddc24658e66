// Throughput of the host executor's game step (games_step_host, Philox draws, observations
// written): games x steps per second, timed with a steady clock around the whole step loop.
#include <chrono>
#include <cstdint>

#include "bench/parse_flags.h"
#include "bench/env_step_common.h"
#include "core/errors.h"
#include "env/games.h"

int main(int argc, char** argv) {
  using namespace grpo;
  CLI::App app{"env_step: host game-step throughput"};
  bench::EnvStepOptions o;
  o.replicas = {32, 256, 4096};
  bench::add_env_step_options(app, o);
  if (const auto code = grpo::bench::parse_flags(app, argc, argv, "env_step")) return *code;
  try {
    o.game.validate();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "env_step: error: %s\n", e.what());
    return 2;
  }
  const GameConfig& c = o.game;
  std::vector<bench::EnvStepResult> results;
  for (int r : o.replicas) {
    const int n = c.groups() * r;
    std::vector<unsigned char> block(games_state_bytes(c, n));
    const GamesView v = make_games_view(c, n, block.data());
    std::vector<float> obs(size_t(n) * c.obs_dim()), reward(n);
    const auto actions = bench::random_actions(n);
    const uint32_t epoch = 0;
    games_reset_host(c, v, r, 1, &epoch, obs.data());
    games_step_host(c, v, actions[0].data(), 1, &epoch, 0, reward.data(), obs.data());  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < o.steps; ++t)
      games_step_host(c, v, actions[t % actions.size()].data(), 1, &epoch, uint32_t(t + 1), reward.data(), obs.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results.push_back({n, o.steps, s});
  }
  bench::report("env_step", "host", "", c, results, o.json);
  return 0;
}
