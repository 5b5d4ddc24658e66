#include "engine/checkpoint/checkpoint.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/checkpoint/config.h"
#include "engine/checkpoint/io.h"
#include "core/errors.h"
#include "core/json_excerpt.h"

namespace grpo {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian bytes as they are in memory");

namespace {

constexpr const char* kFormat = "grpo.cu checkpoint v1";
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;  // safetensors' own limit is 100 MB
constexpr int kMaxHeaderDepth = 4;                    // the format needs 3: header, a tensor, its shape

// One named tensor of the file: where it lives in a slab (slab 0 params, 2 adam m, 3 adam v).
struct Entry {
  std::string name;
  int slab;
  const ParamTensor* t;
};

std::vector<Entry> entries(const ParamLayout& l, bool optimizer) {
  std::vector<Entry> out;
  for (const ParamTensor& t : l.tensors) out.push_back({t.name, 0, &t});
  if (!optimizer) return out;
  for (const ParamTensor& t : l.tensors) out.push_back({std::string("optimizer.exp_avg.") + t.name, 2, &t});
  for (const ParamTensor& t : l.tensors) out.push_back({std::string("optimizer.exp_avg_sq.") + t.name, 3, &t});
  return out;
}

// [rows, cols] for matrices, [n] for the vectors (PyTorch's shapes).
std::vector<int64_t> torch_shape(const ParamTensor& t) {
  if (t.cols == 1) return {t.rows};
  return {t.rows, t.cols};
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string float_str(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(x));  // 9 significant digits: a float round-trips
  return buf;
}

nlohmann::ordered_json scalars_to_json(const TrainScalars& s) {
  return {{"epoch", s.epoch},
          {"adam_step", s.adam_step},
          {"lr0", s.lr0},
          {"lr", s.lr},
          {"grad_norm", s.grad_norm},
          {"clip_scale", s.clip_scale},
          {"nonfinite", s.nonfinite},
          {"skipped_updates", s.skipped_updates},
          {"loss", s.loss},
          {"reward", s.reward},
          {"score", s.score}};
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw UsageError("checkpoint " + path + ": " + what);
}

TrainScalars scalars_from_json(const std::string& path, const nlohmann::json& j) {
  if (!j.is_object()) bad(path, "metadata \"train_scalars\" is not a JSON object");
  TrainScalars s{};
  auto u32 = [&](const char* k, uint32_t& out) {
    const auto it = j.find(k);
    if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX)
      bad(path, std::string("metadata \"train_scalars\" field \"") + k + "\" is missing or not a count");
    out = uint32_t(it->get<uint64_t>());
  };
  // Metrics may be null (JSON has no NaN); the schedule's values must be finite numbers.
  auto f32 = [&](const char* k, float& out, bool finite) {
    const auto it = j.find(k);
    if (it != j.end() && it->is_number()) {
      out = float(it->get<double>());
    } else if (it != j.end() && it->is_null() && !finite) {
      out = std::nanf("");
    } else {
      bad(path, std::string("metadata \"train_scalars\" field \"") + k + "\" is missing or not a number");
    }
    if (finite && !std::isfinite(out))
      bad(path, std::string("metadata \"train_scalars\" field \"") + k + "\" is not finite");
  };
  u32("epoch", s.epoch);
  u32("adam_step", s.adam_step);
  f32("lr0", s.lr0, true);
  f32("lr", s.lr, true);
  f32("grad_norm", s.grad_norm, false);
  f32("clip_scale", s.clip_scale, false);
  u32("nonfinite", s.nonfinite);
  u32("skipped_updates", s.skipped_updates);
  f32("loss", s.loss, false);
  f32("reward", s.reward, false);
  f32("score", s.score, false);
  return s;
}

}  // namespace

std::string checkpoint_file_name(uint32_t epochs_done) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "ckpt-epoch-%06u.safetensors", epochs_done);
  return buf;
}

std::string checkpoint_bytes(const TrainConfig& c, const RunState& s, float best_score, uint32_t best_epoch) {
  const ParamLayout l(c.hidden_size, c.obs_dim());
  if (s.slabs.size() != 4 * l.total)
    throw std::invalid_argument("checkpoint_bytes: the state does not match the config");
  nlohmann::ordered_json h;
  h["__metadata__"] = {{"format", kFormat},
                       {"config", config_to_json(c).dump()},
                       {"epoch", std::to_string(s.scalars.epoch)},
                       {"adam_step", std::to_string(s.scalars.adam_step)},
                       {"lr", float_str(s.scalars.lr)},
                       {"seed", std::to_string(c.seed)},
                       {"best_score", float_str(best_score)},
                       {"best_epoch", std::to_string(best_epoch)},
                       {"train_scalars", scalars_to_json(s.scalars).dump()}};
  const std::vector<Entry> es = entries(l, true);
  size_t at = 0;
  for (const Entry& e : es) {
    const size_t bytes = e.t->size() * sizeof(float);
    h[e.name] = {{"dtype", "F32"}, {"shape", torch_shape(*e.t)}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');  // the format allows space padding; keeps data 8-aligned
  const uint64_t n = header.size();
  std::string out;
  out.reserve(8 + n + at);
  for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xFF));
  out += header;
  for (const Entry& e : es)
    out.append(reinterpret_cast<const char*>(s.slabs.data() + e.slab * l.total + e.t->offset),
               e.t->size() * sizeof(float));
  return out;
}

void save_checkpoint(const std::string& path, const TrainConfig& c, const RunState& s, float best_score,
                     uint32_t best_epoch) {
  write_file_atomic(path, checkpoint_bytes(c, s, best_score, best_epoch));
}

Checkpoint load_checkpoint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) bad(path, "is a folder, not a checkpoint file");
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, std::string("cannot open: ") + std::strerror(errno));
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) bad(path, "read error");
  if (file.size() < 8)
    bad(path, "truncated: " + std::to_string(file.size()) + " bytes, not even the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(file[i])) << (8 * i);
  if (n > kMaxHeader || n > file.size() - 8)
    bad(path, "bad header length " + std::to_string(n) + " (file has " + std::to_string(file.size()) +
                  " bytes): truncated or not a safetensors file");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + std::ptrdiff_t(n), depth_limit(kMaxHeaderDepth));
  } catch (const JsonTooDeep&) {
    bad(path, "the header is nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
  } catch (const nlohmann::json::exception&) {
    bad(path, "the header is not valid JSON");
  }
  if (!h.is_object()) bad(path, "the header is not a JSON object");
  const size_t data_begin = 8 + size_t(n), data_size = file.size() - data_begin;

  // Metadata: string values only (the format), our format tag, the config.
  const auto meta_it = h.find("__metadata__");
  if (meta_it == h.end() || !meta_it->is_object()) bad(path, "no __metadata__: not a grpo.cu checkpoint");
  const nlohmann::json& meta = *meta_it;
  for (const auto& [k, v] : meta.items())
    if (!v.is_string()) bad(path, "__metadata__ value " + json_excerpt(k) + " is not a string");
  auto meta_str = [&](const char* k) {
    const auto it = meta.find(k);
    if (it == meta.end()) bad(path, std::string("__metadata__ has no \"") + k + "\"");
    return it->get<std::string>();
  };
  if (meta_str("format") != kFormat)
    bad(path, "unknown format " + json_excerpt(meta_str("format")) + " (want \"" + kFormat + "\")");
  Checkpoint ck;
  try {
    ck.config = config_from_json(nlohmann::json::parse(meta_str("config")));
    ck.config.validate();
  } catch (const nlohmann::json::exception&) {
    bad(path, "__metadata__ \"config\" is not valid JSON");
  } catch (const UsageError& e) {
    bad(path, std::string("stored config: ") + e.what());
  }
  try {
    ck.state.scalars = scalars_from_json(path, nlohmann::json::parse(meta_str("train_scalars")));
  } catch (const nlohmann::json::exception&) {
    bad(path, "__metadata__ \"train_scalars\" is not valid JSON");
  }
  {
    const std::string b = meta_str("best_score");
    char* end = nullptr;
    ck.best_score = std::strtof(b.c_str(), &end);
    if (b.empty() || *end != '\0' || std::isnan(ck.best_score))
      bad(path, "__metadata__ \"best_score\" is not a number");
    const std::string e = meta_str("best_epoch");
    const unsigned long long be = std::strtoull(e.c_str(), &end, 10);
    if (e.empty() || *end != '\0' || be > UINT32_MAX) bad(path, "__metadata__ \"best_epoch\" is not a count");
    ck.best_epoch = uint32_t(be);
  }

  // Tensors: the seven parameters are required, the moments come both or neither; nothing else.
  const ParamLayout l(ck.config.hidden_size, ck.config.obs_dim());
  const std::vector<Entry> all = entries(l, true);
  for (const auto& [k, v] : h.items())
    if (k != "__metadata__" &&
        std::none_of(all.begin(), all.end(), [&key = k](const Entry& e) { return e.name == key; }))
      bad(path, "unexpected tensor " + json_excerpt(k));
  // Any moment present means all of them must be (checked below, by name).
  for (const auto& kv : h.items()) ck.has_optimizer |= kv.key().rfind("optimizer.", 0) == 0;
  // The data section must hold every tensor before their slabs are allocated: a small file
  // cannot make the loader allocate for a huge stored configuration.
  size_t need = 0;
  for (const Entry& e : entries(l, ck.has_optimizer)) need += e.t->size() * sizeof(float);
  if (data_size < need)
    bad(path, "the data section holds " + std::to_string(data_size) + " bytes; the stored configuration needs " +
                  std::to_string(need) + " (hidden size " + std::to_string(ck.config.hidden_size) + ")");
  ck.state.slabs.assign(4 * l.total, 0.f);
  std::vector<std::pair<size_t, size_t>> ranges;
  const int hid = ck.config.hidden_size, dim = ck.config.obs_dim();
  for (const Entry& e : entries(l, ck.has_optimizer)) {
    const auto it = h.find(e.name);
    if (it == h.end()) bad(path, "tensor \"" + e.name + "\" is missing");
    const nlohmann::json& t = *it;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
      bad(path, "tensor \"" + e.name + "\" lacks dtype, shape or data_offsets");
    if (t["dtype"] != "F32")
      bad(path, "tensor \"" + e.name + "\" has dtype " + json_excerpt(t["dtype"]) + ", want F32");
    std::vector<int64_t> shape;
    std::vector<uint64_t> off;
    try {
      shape = t["shape"].get<std::vector<int64_t>>();
      off = t["data_offsets"].get<std::vector<uint64_t>>();
    } catch (const nlohmann::json::exception&) {
      bad(path, "tensor \"" + e.name + "\" has a malformed shape or data_offsets");
    }
    const std::vector<int64_t> want = torch_shape(*e.t);
    if (shape != want)
      bad(path, "tensor \"" + e.name + "\" has shape " + shape_str(shape) + ", want " + shape_str(want) +
                    " (hidden size " + std::to_string(hid) + ", observation size " + std::to_string(dim) + ")");
    const size_t bytes = e.t->size() * sizeof(float);
    if (off.size() != 2 || off[0] > off[1] || off[1] > data_size || off[1] - off[0] != bytes)
      bad(path, "tensor \"" + e.name + "\" has data_offsets " + json_excerpt(t["data_offsets"]) + " outside the " +
                    std::to_string(data_size) + " data bytes or not matching its " + std::to_string(bytes) + " bytes");
    ranges.emplace_back(off[0], off[1]);
    float* dst = ck.state.slabs.data() + e.slab * l.total + e.t->offset;
    std::memcpy(dst, file.data() + data_begin + off[0], bytes);
    for (size_t i = 0; i < e.t->size(); ++i)
      if (!std::isfinite(dst[i]))
        bad(path, "tensor \"" + e.name + "\" holds a non-finite value at index " + std::to_string(i));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) bad(path, "two tensors' data_offsets overlap");
  return ck;
}

}  // namespace grpo
