#include "engine/checkpoint/checkpoint.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
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
          {"lr_anneal_epochs", s.lr_anneal_epochs},
          {"best_score", s.best_score},
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

// A JSON array of exact non-negative integers (no fraction, no sign, none beyond 64 bits), or
// nullopt: nlohmann's own conversion would truncate 10.9 to 10 and wrap -1.
std::optional<std::vector<uint64_t>> exact_counts(const nlohmann::json& j) {
  if (!j.is_array() || j.size() > 4) return std::nullopt;
  std::vector<uint64_t> out;
  for (const auto& v : j) {
    if (!v.is_number_unsigned()) return std::nullopt;
    out.push_back(v.get<uint64_t>());
  }
  return out;
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
  // Checkpoints from before --lr-schedule hold no such field: their schedule is StepLR alone.
  if (j.contains("lr_anneal_epochs")) u32("lr_anneal_epochs", s.lr_anneal_epochs);
  // ... nor a best score of the device's own: none yet (the snapshot then takes the next epoch).
  s.best_score = std::numeric_limits<float>::lowest();
  if (j.contains("best_score")) f32("best_score", s.best_score, true);
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

namespace {

// An open checkpoint file whose header has been read and checked; the tensors are read next.
struct OpenedCheckpoint {
  std::string path;
  std::ifstream in;
  uint64_t file_size = 0, data_begin = 0;
  nlohmann::json header;
  Checkpoint ck;  // config, scalars and best score; no slabs yet

  void read_at(uint64_t at, char* dst, uint64_t bytes) {
    in.seekg(std::streamoff(at));
    in.read(dst, std::streamsize(bytes));
    if (!in || uint64_t(in.gcount()) != bytes) bad(path, "read error (the file changed or shrank while read)");
  }
};

void open_checkpoint(const std::string& path, OpenedCheckpoint& o) {
  o.path = path;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) bad(path, "is a folder, not a checkpoint file");
  o.in.open(path, std::ios::binary);
  if (!o.in) bad(path, std::string("cannot open: ") + std::strerror(errno));
  // Read piece by piece, each bounded before it is allocated: a device (/dev/zero) or a pipe has
  // no size to check against and is refused.
  if (!fs::is_regular_file(status)) bad(path, "is not a regular file");
  const uint64_t file_size = o.file_size = fs::file_size(path, ec);
  if (ec) bad(path, "cannot read its size: " + ec.message());
  if (file_size < 8) bad(path, "truncated: " + std::to_string(file_size) + " bytes, not even the 8-byte header length");
  char len[8];
  o.read_at(0, len, 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(len[i])) << (8 * i);
  if (n > kMaxHeaderBytes || n > file_size - 8)
    bad(path, "bad header length " + std::to_string(n) + " (file has " + std::to_string(file_size) +
                  " bytes, headers up to " + std::to_string(kMaxHeaderBytes) +
                  "): truncated or not a safetensors file");
  std::string header_text(n, '\0');
  o.read_at(8, header_text.data(), n);
  nlohmann::json& h = o.header;
  try {
    h = nlohmann::json::parse(header_text, depth_limit(kMaxHeaderDepth));
  } catch (const JsonTooDeep&) {
    bad(path, "the header is nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
  } catch (const nlohmann::json::exception&) {
    bad(path, "the header is not valid JSON");
  }
  std::string().swap(header_text);
  if (!h.is_object()) bad(path, "the header is not a JSON object");
  o.data_begin = 8 + n;

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
  // The config and the scalars are JSON inside a string: parsed under the same depth limit.
  auto meta_json = [&](const char* k) {
    try {
      return nlohmann::json::parse(meta_str(k), depth_limit(kMaxHeaderDepth));
    } catch (const JsonTooDeep&) {
      bad(path, std::string("__metadata__ \"") + k + "\" is nested deeper than " + std::to_string(kMaxHeaderDepth) +
                    " levels");
    } catch (const nlohmann::json::exception&) {
      bad(path, std::string("__metadata__ \"") + k + "\" is not valid JSON");
    }
  };
  if (meta_str("format") != kFormat)
    bad(path, "unknown format " + json_excerpt(meta_str("format")) + " (want \"" + kFormat + "\")");
  Checkpoint& ck = o.ck;
  const nlohmann::json config = meta_json("config");
  try {
    ck.config = config_from_json(config);
    ck.config.validate();
  } catch (const UsageError& e) {
    bad(path, std::string("stored config: ") + e.what());
  }
  ck.state.scalars = scalars_from_json(path, meta_json("train_scalars"));
  {
    const std::string b = meta_str("best_score");
    char* end = nullptr;
    ck.best_score = std::strtof(b.c_str(), &end);
    if (b.empty() || *end != '\0' || std::isnan(ck.best_score))
      bad(path, "__metadata__ \"best_score\" is not a number");
    const std::string e = meta_str("best_epoch");
    const unsigned long long be = std::strtoull(e.c_str(), &end, 10);
    if (e.empty() || e.size() > 10 || e.find_first_not_of("0123456789") != std::string::npos || *end != '\0' ||
        be > UINT32_MAX)
      bad(path, "__metadata__ \"best_epoch\" is not a count");
    ck.best_epoch = uint32_t(be);
  }
}

}  // namespace

TrainConfig load_checkpoint_config(const std::string& path) {
  OpenedCheckpoint o;
  open_checkpoint(path, o);
  return o.ck.config;
}

Checkpoint load_checkpoint(const std::string& path) {
  OpenedCheckpoint o;
  open_checkpoint(path, o);
  const nlohmann::json& h = o.header;
  Checkpoint& ck = o.ck;
  const uint64_t data_begin = o.data_begin, data_size = o.file_size - o.data_begin;
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
    const auto shape = exact_counts(t["shape"]);
    const auto off = exact_counts(t["data_offsets"]);
    if (!shape || !off)
      bad(path, "tensor \"" + e.name + "\" has a shape or data_offsets that is not a list of integers >= 0 (got " +
                    json_excerpt(shape ? t["data_offsets"] : t["shape"]) + ")");
    const std::vector<int64_t> want = torch_shape(*e.t);
    if (!std::equal(shape->begin(), shape->end(), want.begin(), want.end(),
                    [](uint64_t a, int64_t b) { return a == uint64_t(b); }))
      bad(path, "tensor \"" + e.name + "\" has shape " + json_excerpt(t["shape"]) + ", want " + shape_str(want) +
                    " (hidden size " + std::to_string(hid) + ", observation size " + std::to_string(dim) + ")");
    const size_t bytes = e.t->size() * sizeof(float);
    const std::vector<uint64_t>& off_ = *off;
    if (off_.size() != 2 || off_[0] > off_[1] || off_[1] > data_size || off_[1] - off_[0] != bytes)
      bad(path, "tensor \"" + e.name + "\" has data_offsets " + json_excerpt(t["data_offsets"]) + " outside the " +
                    std::to_string(data_size) + " data bytes or not matching its " + std::to_string(bytes) + " bytes");
    ranges.emplace_back(off_[0], off_[1]);
    float* dst = ck.state.slabs.data() + e.slab * l.total + e.t->offset;
    o.read_at(data_begin + off_[0], reinterpret_cast<char*>(dst), bytes);
    for (size_t i = 0; i < e.t->size(); ++i) {
      if (!std::isfinite(dst[i]))
        bad(path, "tensor \"" + e.name + "\" holds a non-finite value at index " + std::to_string(i));
      if (e.slab == 0 && std::fabs(dst[i]) > kMaxParameterMagnitude)
        bad(path, "tensor \"" + e.name + "\" holds " + float_str(dst[i]) + " at index " + std::to_string(i) +
                      ", beyond the largest parameter magnitude accepted, " + float_str(kMaxParameterMagnitude));
      if (e.slab == 3 && dst[i] < 0.f)
        bad(path, "tensor \"" + e.name + "\" holds a negative value at index " + std::to_string(i) +
                      " (a second moment is a mean of squares)");
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) bad(path, "two tensors' data_offsets overlap");
  return std::move(ck);
}

}  // namespace grpo
