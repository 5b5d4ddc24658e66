// Shared by bench/env_step.cpp (host loop) and bench/env_step_cuda.cpp (step kernel): options,
// random actions, and the table / JSON report. Throughput is games x steps per second.
#pragma once
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "env/game_config.h"
#include "cli/flag_checks.h"
#include "cli/game_flags.h"

namespace grpo::bench {

struct EnvStepOptions {
  GameConfig game;
  std::vector<int> replicas;  // games = groups x replicas
  int steps = 200;
  bool json = false;
};

inline void add_env_step_options(CLI::App& app, EnvStepOptions& o) {
  add_game_flags(app, o.game);
  app.add_option("--replicas", o.replicas, "games per start group (one run per value)")->capture_default_str();
  app.add_option("--steps", o.steps, "steps per run")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object instead of the table");
  check_every_flag_value(app);
}

// K different random action vectors, cycled through the steps (sampling is not what is measured).
inline std::vector<std::vector<int32_t>> random_actions(int n, int k = 8) {
  std::mt19937 gen(12345);
  std::vector<std::vector<int32_t>> a(k, std::vector<int32_t>(n));
  for (auto& v : a)
    for (auto& x : v) x = static_cast<int32_t>(gen() % 3);
  return a;
}

struct EnvStepResult {
  int games, steps;
  double seconds;
};

// Bytes a step moves per game at least: state read and written, action, reward, observation.
inline double bytes_per_game_step(const GameConfig& c) {
  const double state = 4.0 * (2 + 2 * c.max_fruits + 4);
  return 2 * state + 4 + 4 + 4.0 * c.obs_dim();
}

inline void report(const char* bench, const char* executor, const char* note, const GameConfig& c,
                   const std::vector<EnvStepResult>& rs, bool json) {
  if (json) {
    std::printf("{\"bench\": \"%s\", \"executor\": \"%s\", \"note\": \"%s\", \"max_fruits\": %d, \"runs\": [", bench,
                executor, note, c.max_fruits);
    for (size_t i = 0; i < rs.size(); ++i) {
      const double gs = double(rs[i].games) * rs[i].steps;
      std::printf(
          "%s{\"games\": %d, \"steps\": %d, \"seconds\": %.6g, \"game_steps_per_s\": %.6g, "
          "\"ns_per_game_step\": %.6g, \"min_bytes_per_s\": %.6g}",
          i ? ", " : "", rs[i].games, rs[i].steps, rs[i].seconds, gs / rs[i].seconds, 1e9 * rs[i].seconds / gs,
          gs * bytes_per_game_step(c) / rs[i].seconds);
    }
    std::printf("]}\n");
    return;
  }
  std::printf("%s (%s)%s%s\n", bench, executor, *note ? ": " : "", note);
  std::printf("%10s %7s %11s %16s %16s %12s\n", "games", "steps", "seconds", "game-steps/s", "ns/game-step",
              "min GB/s");
  for (const auto& r : rs) {
    const double gs = double(r.games) * r.steps;
    std::printf("%10d %7d %11.4f %16.4g %16.4g %12.4g\n", r.games, r.steps, r.seconds, gs / r.seconds,
                1e9 * r.seconds / gs, gs * bytes_per_game_step(c) / r.seconds * 1e-9);
  }
}

}  // namespace grpo::bench
