#include "engine/checkpoint/config.h"

#include <cstdint>
#include <limits>

#include "core/errors.h"
#include "core/json_excerpt.h"

namespace grpo {

nlohmann::ordered_json config_to_json(const TrainConfig& c) {
  const GameConfig& g = c.game;
  return {{"game",
           {{"screen_width", g.screen_width},
            {"screen_height", g.screen_height},
            {"sprite_width", g.sprite_width},
            {"max_fruits", g.max_fruits},
            {"min_fruits", g.min_fruits},
            {"min_interval_steps", g.min_interval_steps},
            {"win_score", g.win_score},
            {"fail_score", g.fail_score}}},
          {"hidden_size", c.hidden_size},
          {"batch_size", c.batch_size},
          {"total_epochs", c.total_epochs},
          {"max_steps", c.max_steps},
          {"lr", c.lr},
          {"lr_schedule", lr_schedule_name(c.lr_schedule)},
          {"dropout", c.dropout},
          {"gamma", c.gamma},
          {"entropy_coef", c.entropy_coef},
          {"max_grad_norm", c.max_grad_norm},
          {"weight_decay", c.weight_decay},
          {"algo", algo_name(c.algo)},
          {"ppo_epochs", c.ppo_epochs},
          {"minibatches", c.minibatches},
          {"clip", c.clip},
          {"kl_beta", c.kl_beta},
          {"patience", c.patience},
          {"checkpoint_every", c.checkpoint_every},
          {"seed", c.seed},
          {"backend", backend_name(c.backend)},
          {"use_graph", c.use_graph},
          {"precision", precision_name(c.precision)},
          {"rollout_cluster", c.rollout_cluster},
          {"rollout_cluster_mma", c.rollout_cluster_mma},
          {"out_dir", c.out_dir},
          {"metrics_path", c.metrics_path}};
}

namespace {

template <class T>
void read(const nlohmann::json& j, const char* key, T& out) {
  const auto it = j.find(key);
  if (it == j.end()) throw UsageError(std::string("config field \"") + key + "\" is missing");
  try {
    // Floats go through double: nlohmann wrote them with enough digits to come back exactly.
    if constexpr (std::is_same_v<T, float>) {
      out = static_cast<float>(it->template get<double>());
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // nlohmann converts a fraction or an out-of-range number with a plain cast (undefined
      // behaviour): only an integer that T holds is taken.
      using L = std::numeric_limits<T>;
      bool fits = false;
      if (it->is_number_unsigned())
        fits = it->template get<uint64_t>() <= uint64_t(L::max());
      else if (it->is_number_integer() && std::is_signed_v<T>)
        fits = it->template get<int64_t>() >= int64_t(L::min()) && it->template get<int64_t>() <= int64_t(L::max());
      if (!fits)
        throw UsageError(std::string("config field \"") + key + "\" must be an integer in [" +
                         std::to_string(L::min()) + ", " + std::to_string(L::max()) + "] (got " + json_excerpt(*it) +
                         ")");
      out = it->template get<T>();
    } else {
      out = it->template get<T>();
    }
  } catch (const nlohmann::json::exception&) {
    throw UsageError(std::string("config field \"") + key + "\" has the wrong type");
  }
}

}  // namespace

TrainConfig config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("config is not a JSON object");
  TrainConfig c;
  const auto g = j.find("game");
  if (g == j.end() || !g->is_object()) throw UsageError("config field \"game\" is missing");
  read(*g, "screen_width", c.game.screen_width);
  read(*g, "screen_height", c.game.screen_height);
  read(*g, "sprite_width", c.game.sprite_width);
  read(*g, "max_fruits", c.game.max_fruits);
  read(*g, "min_fruits", c.game.min_fruits);
  read(*g, "min_interval_steps", c.game.min_interval_steps);
  read(*g, "win_score", c.game.win_score);
  read(*g, "fail_score", c.game.fail_score);
  read(j, "hidden_size", c.hidden_size);
  read(j, "batch_size", c.batch_size);
  read(j, "total_epochs", c.total_epochs);
  read(j, "max_steps", c.max_steps);
  read(j, "lr", c.lr);
  // Checkpoints written before --lr-schedule existed hold none: StepLR alone.
  if (j.contains("lr_schedule")) {
    std::string schedule;
    read(j, "lr_schedule", schedule);
    if (schedule != "step" && schedule != "linear")
      throw UsageError("config field \"lr_schedule\" must be \"step\" or \"linear\" (got " +
                       nlohmann::json(schedule).dump() + ")");
    c.lr_schedule = schedule == "linear" ? LrSchedule::Linear : LrSchedule::Step;
  }
  read(j, "dropout", c.dropout);
  read(j, "gamma", c.gamma);
  read(j, "entropy_coef", c.entropy_coef);
  read(j, "max_grad_norm", c.max_grad_norm);
  read(j, "weight_decay", c.weight_decay);
  // Checkpoints written before --algo existed hold none of these: they are reference runs.
  if (j.contains("algo")) {
    std::string algo;
    read(j, "algo", algo);
    if (algo != "reference" && algo != "grpo")
      throw UsageError("config field \"algo\" must be \"reference\" or \"grpo\" (got " + nlohmann::json(algo).dump() +
                       ")");
    c.algo = algo == "grpo" ? Algo::Grpo : Algo::Reference;
    read(j, "ppo_epochs", c.ppo_epochs);
    read(j, "minibatches", c.minibatches);
    read(j, "clip", c.clip);
    read(j, "kl_beta", c.kl_beta);
  }
  read(j, "patience", c.patience);
  read(j, "checkpoint_every", c.checkpoint_every);
  read(j, "seed", c.seed);
  std::string backend;
  read(j, "backend", backend);
  c.backend = backend == "cuda" ? Backend::Cuda : backend == "host" ? Backend::Host : Backend::Auto;
  read(j, "use_graph", c.use_graph);
  // "precision" since --precision; older checkpoints have "tf32" (true: tf32, false: fp32).
  if (j.contains("precision") || !j.contains("tf32")) {
    std::string precision;
    read(j, "precision", precision);
    const auto p = parse_precision(precision);
    if (!p)
      throw UsageError(
          "config field \"precision\" must be \"fp32\", \"tf32\" or \"bf16\" (got " +
          nlohmann::json(precision.substr(0, 40)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + ")");
    c.precision = *p;
  } else {
    bool tf32 = false;
    read(j, "tf32", tf32);
    c.precision = tf32 ? Precision::Tf32 : Precision::Fp32;
  }
  // The rollout's way since bf16 took the cluster kernel by default; older checkpoints ran the
  // steps unless a flag said otherwise, which they did not record: the steps.
  if (j.contains("rollout_cluster") || j.contains("rollout_cluster_mma")) {
    read(j, "rollout_cluster", c.rollout_cluster);
    read(j, "rollout_cluster_mma", c.rollout_cluster_mma);
  }
  read(j, "out_dir", c.out_dir);
  read(j, "metrics_path", c.metrics_path);
  return c;
}

}  // namespace grpo
