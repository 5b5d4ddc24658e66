// Random replay documents and a direct simulation to check `grpo replay` against.
#pragma once
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/rules.h"
#include "tests/env/rules_fixture.h"

namespace grpo::test {

// A valid document with n games and T steps: random start observations (active fruits anywhere
// above the bottom row, some at or past it to exercise off-screen fruits), random actions and draws.
inline nlohmann::json random_replay_document(const GameConfig& c, int n, int T, uint32_t seed) {
  std::mt19937 gen(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  nlohmann::json doc;
  doc["game"] = {{"screen_width", c.screen_width}, {"screen_height", c.screen_height},
                 {"sprite_width", c.sprite_width}, {"max_fruits", c.max_fruits},
                 {"min_fruits", c.min_fruits},     {"min_interval_steps", c.min_interval_steps}};
  nlohmann::json obs = nlohmann::json::array();
  for (int g = 0; g < n; ++g) {
    nlohmann::json row = {uni(0, c.screen_width - 1)};
    for (int i = 0; i < c.max_fruits; ++i) {
      row.push_back(uni(0, c.screen_width - 1));
      row.push_back(uni(0, c.screen_height + 1));
      row.push_back(uni(0, 1));
    }
    obs.push_back(row);
  }
  doc["observations"] = obs;
  doc["steps"] = nlohmann::json::array();
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (int t = 0; t < T; ++t) {
    nlohmann::json a = nlohmann::json::array(), u = nlohmann::json::array(), x = nlohmann::json::array();
    for (int g = 0; g < n; ++g) {
      a.push_back(uni(0, 2));
      u.push_back(coin(gen));
      nlohmann::json xs = nlohmann::json::array();
      for (int i = 0; i < c.max_fruits; ++i) xs.push_back(uni(0, c.screen_width - 1));
      x.push_back(xs);
    }
    doc["steps"].push_back({{"actions", a}, {"coins", u}, {"spawn_x", x}});
  }
  return doc;
}

// The expected output lines, from the rules applied one game at a time.
inline std::vector<nlohmann::json> simulate_replay(const GameConfig& c, const nlohmann::json& doc) {
  std::vector<GameState> games;
  for (const auto& row : doc["observations"]) {
    GameState s = start_state(0, 0);
    s.active = 0;
    s.sprite_x = row[0].get<int>();
    for (int i = 0; i < c.max_fruits; ++i) {
      s.fruit_x[i] = row[1 + 3 * i].get<int>();
      s.fruit_y[i] = row[2 + 3 * i].get<int>();
      if (row[3 + 3 * i].get<int>()) s.active |= 1u << i;
    }
    games.push_back(s);
  }
  std::vector<nlohmann::json> lines;
  for (size_t t = 0; t < doc["steps"].size(); ++t) {
    const auto& st = doc["steps"][t];
    nlohmann::json line = {{"t", t}}, obs = nlohmann::json::array(), score = nlohmann::json::array(),
                   steps = nlohmann::json::array(), bottomed = nlohmann::json::array(),
                   reward = nlohmann::json::array();
    for (size_t g = 0; g < games.size(); ++g) {
      StepDraws d{};
      d.coin = static_cast<float>(st["coins"][g].get<double>());
      for (int i = 0; i < c.max_fruits; ++i) d.spawn_x[i] = st["spawn_x"][g][i].get<int>();
      const int before = games[g].score;
      games[g] = step(c, games[g], st["actions"][g].get<int>(), d).state;
      float row[1 + 3 * kMaxFruitSlots];
      write_observation(c, games[g], row);
      obs.push_back(std::vector<float>(row, row + c.obs_dim()));
      score.push_back(games[g].score);
      steps.push_back(games[g].steps);
      bottomed.push_back(games[g].bottomed);
      reward.push_back(grpo::step_reward(uint32_t(t), before, games[g]));
    }
    line["observations"] = obs;
    line["score"] = score;
    line["steps"] = steps;
    line["bottomed"] = bottomed;
    line["reward"] = reward;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace grpo::test
