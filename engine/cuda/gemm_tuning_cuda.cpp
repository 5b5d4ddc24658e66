// engine/cuda/gemm_tuning.h's file: JSON (nlohmann), read back with every field checked.
#include "engine/cuda/gemm_tuning.h"

#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/cuda_check.h"
#include "core/errors.h"
#include "core/json_excerpt.h"

namespace grpo {

namespace {

constexpr int kFormat = 2;                         // 1: before K splits (read still, with none)
constexpr int kMaxRank = 64;                       // cuBLASLt returns a handful of answers; a file asks for fewer
constexpr int kMaxSplit = 64;                      // K split more ways than this buys nothing
constexpr size_t kMaxFileBytes = size_t(1) << 20;  // a configuration sends a few dozen products
const char* const kShapeFields[] = {"ta",  "tb",  "m",       "n",       "k",       "lda",
                                    "ldb", "ldc", "align_a", "align_b", "align_c", "bf16"};

}  // namespace

GemmDevice this_gemm_device() {
  int dev = 0;
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  return GemmDevice{p.name, static_cast<long long>(cublasLtGetVersion())};
}

std::string gemm_tuning_json(const GemmDevice& device, Precision precision, const std::vector<Blas::RankTimes>& times,
                             double min_gain) {
  nlohmann::json products = nlohmann::json::array();
  const auto rounded = [](float v) {
    return std::isfinite(v) ? nlohmann::json(std::round(double(v) * 100) / 100) : nullptr;
  };
  for (const Blas::RankTimes& t : times) {
    // The fastest of the ranks, then of rank 0's splits; NaN (not taken) never wins.
    GemmAnswer best;
    float best_us = t.us.empty() ? NAN : t.us[0];
    const auto consider = [&](float v, GemmAnswer a) {
      if (std::isfinite(v) && !(v >= best_us)) best_us = v, best = a;
    };
    for (size_t r = 1; r < t.us.size(); ++r) consider(t.us[r], GemmAnswer{int(r), 0});
    for (size_t i = 0; i < t.split_us.size() && i < t.splits.size(); ++i)
      consider(t.split_us[i], GemmAnswer{0, t.splits[i]});
    const bool wins = !t.us.empty() && std::isfinite(t.us[0]) && best_us <= t.us[0] * (1.0 - min_gain);
    if (!wins) best = GemmAnswer{};
    nlohmann::json us = nlohmann::json::array(), splits = nlohmann::json::array(), split_us = nlohmann::json::array();
    for (float v : t.us) us.push_back(rounded(v));
    for (size_t i = 0; i < t.split_us.size() && i < t.splits.size(); ++i)
      splits.push_back(t.splits[i]), split_us.push_back(rounded(t.split_us[i]));
    products.push_back({{"shape", t.shape},
                        {"rank", best.rank},
                        {"split", best.split},
                        {"us", us},
                        {"splits", splits},
                        {"split_us", split_us}});
  }
  const nlohmann::ordered_json head = {
      {"grpo_gemm_tuning", kFormat},
      {"device", device.name},
      {"cublaslt_version", device.cublaslt_version},
      {"precision", precision_name(precision)},
      {"min_gain", min_gain},
      {"shape_fields", std::vector<std::string>(std::begin(kShapeFields), std::end(kShapeFields))}};
  // A key a line and a product a line, so that a person can read and compare files.
  std::string text = "{";
  for (const auto& [key, value] : head.items()) text += "\n \"" + key + "\": " + value.dump() + ",";
  text += "\n \"products\": [";
  for (size_t i = 0; i < products.size(); ++i) text += (i ? ",\n  " : "\n  ") + products[i].dump();
  text += products.empty() ? "]\n}\n" : "\n ]\n}\n";
  return text;
}

std::map<GemmShape, GemmAnswer> read_gemm_tuning(const std::string& path, const GemmDevice& device,
                                                 Precision precision) {
  const auto bad = [&path](const std::string& what) { return UsageError("--gemm-tuning " + path + ": " + what); };
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad("cannot be read");
  std::string text;
  text.reserve(4096);
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, size_t(in.gcount()));
    if (text.size() > kMaxFileBytes)
      throw bad("larger than a tuning file (" + std::to_string(kMaxFileBytes) + " bytes)");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, depth_limit(4));
  } catch (const JsonTooDeep&) {
    throw bad("nested deeper than a tuning file");
  } catch (const nlohmann::json::exception&) {
    throw bad("not JSON");
  }
  if (!j.is_object() || !j.contains("grpo_gemm_tuning")) throw bad("not a tuning file (grpo tune-gemm writes them)");
  const auto& format = j["grpo_gemm_tuning"];
  if (!format.is_number_integer() || format.get<long long>() < 1 || format.get<long long>() > kFormat)
    throw bad("format " + json_excerpt(format) + ", where this build reads 1 to " + std::to_string(kFormat));
  const auto field = [&](const char* name) -> const nlohmann::json& {
    const auto it = j.find(name);
    if (it == j.end()) throw bad(std::string("no \"") + name + "\"");
    return *it;
  };
  const nlohmann::json &name = field("device"), &version = field("cublaslt_version"), &products = field("products");
  if (!name.is_string()) throw bad("\"device\" is " + json_excerpt(name) + ", not a name");
  if (!version.is_number_integer()) throw bad("\"cublaslt_version\" is " + json_excerpt(version) + ", not a number");
  if (name.get<std::string>() != device.name || version.get<long long>() != device.cublaslt_version)
    throw bad("timed on " + json_excerpt(name) + " with cuBLASLt " + std::to_string(version.get<long long>()) +
              ", and this run has \"" + device.name + "\" with cuBLASLt " + std::to_string(device.cublaslt_version) +
              ": its answers would be other algorithms here (run grpo tune-gemm on this machine)");
  const nlohmann::json& tuned_for = field("precision");
  if (!tuned_for.is_string() || tuned_for.get<std::string>() != precision_name(precision))
    throw bad("tuned for --precision " + json_excerpt(tuned_for) + ", and this run is --precision " +
              precision_name(precision) + " (another question to cuBLASLt's heuristic, another list of answers)");
  if (!products.is_array()) throw bad("\"products\" is not a list");
  std::map<GemmShape, GemmAnswer> answers;
  for (size_t i = 0; i < products.size(); ++i) {
    const nlohmann::json& p = products[i];
    const std::string at = "product " + std::to_string(i);
    if (!p.is_object() || !p.contains("shape") || !p.contains("rank"))
      throw bad(at + " is " + json_excerpt(p) + ", not {\"shape\": [...], \"rank\": r}");
    const nlohmann::json &shape = p["shape"], &rank = p["rank"];
    if (!shape.is_array() || shape.size() != GemmShape{}.size())
      throw bad(at + ": \"shape\" is " + json_excerpt(shape) + ", not " + std::to_string(GemmShape{}.size()) +
                " integers");
    GemmShape s{};
    for (size_t f = 0; f < s.size(); ++f) {
      const nlohmann::json& v = shape[f];
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1LL << 31) - 1)
        throw bad(at + ": \"shape\" field " + kShapeFields[f] + " is " + json_excerpt(v) +
                  ", not an integer from 0 to 2^31 - 1");
      s[f] = int(v.get<long long>());
    }
    if (!rank.is_number_integer() || rank.get<long long>() < 0 || rank.get<long long>() >= kMaxRank)
      throw bad(at + ": \"rank\" is " + json_excerpt(rank) + ", not an integer from 0 to " +
                std::to_string(kMaxRank - 1));
    GemmAnswer a{int(rank.get<long long>()), 0};
    if (const auto split = p.find("split"); split != p.end()) {
      if (!split->is_number_integer() || split->get<long long>() < 0 || split->get<long long>() > kMaxSplit)
        throw bad(at + ": \"split\" is " + json_excerpt(*split) + ", not an integer from 0 to " +
                  std::to_string(kMaxSplit));
      a.split = int(split->get<long long>());
    }
    if (!answers.emplace(s, a).second) throw bad(at + " repeats an earlier product's shape");
  }
  return answers;
}

}  // namespace grpo
