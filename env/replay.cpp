// Parsing, validation and printing for `grpo replay` (format in env/replay.h), and its host backend.
#include "env/replay.h"

#include <charconv>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_excerpt.h"
#include "env/games.h"

namespace grpo {

namespace {
using nlohmann::json;

constexpr int kMaxY = (1 << 24) - 2;  // y + 1 stays exact in float32

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw UsageError("replay input: " + field + ": " + what);
}

// The helpers that return a reference into the document take the field name as a string_view:
// g++ 13's -Wdangling-reference flags any such call that binds a temporary std::string.

// Document nesting allowed: the format needs 5 levels (document, steps, a step, spawn_x, a row).
constexpr int kMaxDepth = 8;
// Games a document may hold: the engine's own bound (TrainConfig::kMaxGames).
constexpr size_t kMaxGames = size_t{1} << 24;

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

const json& array_of(const json& j, std::string_view field_view, size_t len) {
  const std::string field(field_view);
  if (!j.is_array()) fail(field, "must be an array");
  if (j.size() != len)
    fail(field, "must have " + std::to_string(len) + " elements (has " + std::to_string(j.size()) + ")");
  return j;
}

// An integral number in [lo, hi] (3 and 3.0 alike: observations are float vectors).
int32_t integer_in(const json& j, const std::string& field, long long lo, long long hi) {
  const std::string range = "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!j.is_number()) fail(field, range);
  double v;
  if (j.is_number_unsigned())
    v = static_cast<double>(j.get<uint64_t>());
  else if (j.is_number_integer())
    v = static_cast<double>(j.get<int64_t>());
  else
    v = j.get<double>();
  if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(hi))
    fail(field, range + " (got " + json_excerpt(j) + ")");
  return static_cast<int32_t>(v);
}

void check_keys(const json& obj, const std::string& field, std::initializer_list<const char*> allowed) {
  if (!obj.is_object()) fail(field, "must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) fail(field, "unknown key " + json_excerpt(json(it.key())));
  }
}

const json& required(const json& obj, std::string_view field, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(field.empty() ? std::string(key) : std::string(field) + "." + key, "is missing");
  return *it;
}

GameConfig parse_game(const json& j) {
  GameConfig cfg;
  check_keys(j, "game",
             {"screen_width", "screen_height", "sprite_width", "max_fruits", "min_fruits", "min_interval_steps",
              "win_score", "fail_score"});
  const struct {
    const char* key;
    int* dst;
  } fields[] = {{"screen_width", &cfg.screen_width}, {"screen_height", &cfg.screen_height},
                {"sprite_width", &cfg.sprite_width}, {"max_fruits", &cfg.max_fruits},
                {"min_fruits", &cfg.min_fruits},     {"min_interval_steps", &cfg.min_interval_steps},
                {"win_score", &cfg.win_score},       {"fail_score", &cfg.fail_score}};
  for (const auto& f : fields) {
    auto it = j.find(f.key);
    if (it == j.end()) continue;
    if (!it->is_number_integer())
      fail(std::string("game.") + f.key, "must be an integer (got " + json_excerpt(*it) + ")");
    *f.dst = integer_in(*it, std::string("game.") + f.key, INT32_MIN, INT32_MAX);
  }
  try {
    cfg.validate();
  } catch (const UsageError& e) {
    // validate() names the command-line flag ("--screen-width must be ..."): name the field.
    std::string msg = e.what();
    const size_t sp = msg.find(' ');
    std::string key = msg.substr(2, sp - 2);
    for (char& c : key)
      if (c == '-') c = '_';
    fail("game." + key, msg.substr(sp + 1));
  }
  return cfg;
}

GameState parse_observation(const GameConfig& cfg, const json& row, const std::string& field) {
  array_of(row, field, static_cast<size_t>(cfg.obs_dim()));
  GameState s = start_state(0, 0);
  s.active = 0;
  s.sprite_x = integer_in(row[0], at(field, 0), 0, cfg.screen_width - 1);
  for (int i = 0; i < cfg.max_fruits; ++i) {
    s.fruit_x[i] = integer_in(row[1 + 3 * i], at(field, 1 + 3 * i), 0, cfg.screen_width - 1);
    s.fruit_y[i] = integer_in(row[2 + 3 * i], at(field, 2 + 3 * i), 0, kMaxY);
    if (integer_in(row[3 + 3 * i], at(field, 3 + 3 * i), 0, 1)) s.active |= 1u << i;
  }
  return s;
}

ReplayStep parse_step(const GameConfig& cfg, int n, const json& j, const std::string& field) {
  check_keys(j, field, {"actions", "coins", "spawn_x"});
  ReplayStep st;
  const std::string fa = field + ".actions", fc = field + ".coins", fs = field + ".spawn_x";
  const json& actions = array_of(required(j, field, "actions"), fa, n);
  const json& coins = array_of(required(j, field, "coins"), fc, n);
  const json& spawn = array_of(required(j, field, "spawn_x"), fs, n);
  for (int g = 0; g < n; ++g) {
    st.actions.push_back(integer_in(actions[g], at(fa, g), 0, 2));
    const json& c = coins[g];
    if (!c.is_number() || !(c.get<double>() >= 0.0 && c.get<double>() < 1.0))
      fail(at(fc, g), "must be a number in [0, 1) (got " + json_excerpt(c) + ")");
    // Rounding may carry a coin just below 1 up to 1.0f: still a valid "heads" (> 0.5).
    st.coins.push_back(static_cast<float>(c.get<double>()));
    const std::string row_field = at(fs, g);
    const json& row = array_of(spawn[g], row_field, static_cast<size_t>(cfg.max_fruits));
    for (int k = 0; k < cfg.max_fruits; ++k)
      st.spawn_x.push_back(integer_in(row[k], at(at(fs, g), k), 0, cfg.screen_width - 1));
  }
  return st;
}

void append_float(std::string& out, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

template <class T>
void append_ints(std::string& out, const std::vector<T>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(static_cast<long long>(v[i]));
  }
  out += ']';
}
}  // namespace

ReplayDocument parse_replay(std::istream& in) {
  json doc;
  try {
    doc = json::parse(in, depth_limit(kMaxDepth));
  } catch (const JsonTooDeep&) {
    fail("document", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
  } catch (const json::exception& e) {  // syntax, numbers beyond double, bad UTF-8
    // The parser quotes the token it stopped at, which may be as long as the document.
    std::string what = e.what();
    if (what.size() > 160) what = what.substr(0, 160) + "...";
    fail("document", "not valid JSON: " + what);
  }
  check_keys(doc, "document", {"game", "observations", "steps"});
  ReplayDocument r;
  if (auto it = doc.find("game"); it != doc.end()) r.cfg = parse_game(*it);
  const json& obs = required(doc, "", "observations");
  if (!obs.is_array() || obs.empty()) fail("observations", "must be a non-empty array of observation rows");
  if (obs.size() > kMaxGames) fail("observations", "has more than 2^24 rows (games)");
  r.n = static_cast<int>(obs.size());
  for (int g = 0; g < r.n; ++g) r.start.push_back(parse_observation(r.cfg, obs[g], at("observations", g)));
  const json& steps = required(doc, "", "steps");
  if (!steps.is_array()) fail("steps", "must be an array");
  for (size_t k = 0; k < steps.size(); ++k) r.steps.push_back(parse_step(r.cfg, r.n, steps[k], at("steps", k)));
  return r;
}

std::string format_replay_frame(const GameConfig& cfg, uint32_t t, const ReplayFrame& f) {
  const size_t d = static_cast<size_t>(cfg.obs_dim());
  const size_t n = f.reward.size();
  std::string out = "{\"t\": " + std::to_string(t) + ", \"observations\": [";
  for (size_t g = 0; g < n; ++g) {
    if (g) out += ", ";
    out += '[';
    for (size_t k = 0; k < d; ++k) {
      if (k) out += ", ";
      out += std::to_string(static_cast<long long>(f.observations[g * d + k]));
    }
    out += ']';
  }
  out += "], \"score\": ";
  append_ints(out, f.score);
  out += ", \"steps\": ";
  append_ints(out, f.steps);
  out += ", \"bottomed\": ";
  append_ints(out, f.bottomed);
  out += ", \"reward\": [";
  for (size_t g = 0; g < n; ++g) {
    if (g) out += ", ";
    append_float(out, f.reward[g]);
  }
  out += "]}";
  return out;
}

void replay_host(const ReplayDocument& doc, const ReplayEmit& emit) {
  const GameConfig& cfg = doc.cfg;
  const int n = doc.n;
  std::vector<unsigned char> block(games_state_bytes(cfg, n));
  const GamesView v = make_games_view(cfg, n, block.data());
  for (int g = 0; g < n; ++g) v.store(g, doc.start[g]);
  ReplayFrame f;
  f.observations.resize(static_cast<size_t>(n) * cfg.obs_dim());
  f.reward.resize(n);
  for (size_t t = 0; t < doc.steps.size(); ++t) {
    const ReplayStep& s = doc.steps[t];
    games_step_explicit_host(cfg, v, s.actions.data(), s.coins.data(), s.spawn_x.data(), static_cast<uint32_t>(t),
                             f.reward.data(), f.observations.data());
    f.score.assign(v.score, v.score + n);
    f.steps.assign(v.steps, v.steps + n);
    f.bottomed.assign(v.bottomed, v.bottomed + n);
    emit(static_cast<uint32_t>(t), f);
  }
}

void run_replay(std::istream& in, std::ostream& out, ReplayBackend backend) {
  const ReplayDocument doc = parse_replay(in);
  backend(doc, [&](uint32_t t, const ReplayFrame& f) { out << format_replay_frame(doc.cfg, t, f) << '\n'; });
  out.flush();
}

}  // namespace grpo
