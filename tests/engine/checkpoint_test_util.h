// Helpers of the checkpoint tests: a scratch folder, whole-file reads and writes, a trained
// state with its file bytes, and the safetensors header taken apart and put back.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/checkpoint/checkpoint.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {

namespace fs = std::filesystem;

inline fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() / ("grpo_ckpt_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// A trained state (3 epochs: moments and scalars are all non-trivial) and its file bytes.
struct Trained {
  TrainConfig c = tiny_config();
  RunState s;
  std::string bytes;
  Trained() {
    auto ex = make_host_executor(c);
    s = run_epochs(c, *ex, 3);
    bytes = checkpoint_bytes(c, s, 0.75f, 1);
  }
};
inline const Trained& trained() {
  static const Trained t;
  return t;
}

inline uint64_t header_len(const std::string& b) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(b[i])) << (8 * i);
  return n;
}
inline nlohmann::json header(const std::string& b) { return nlohmann::json::parse(b.substr(8, header_len(b))); }
// The file with its header replaced (data kept as it is).
inline std::string with_header(const std::string& b, const nlohmann::json& h) {
  const std::string text = h.dump();
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xFF));
  return out + text + b.substr(8 + header_len(b));
}

// The file with its header replaced by raw text (for headers nlohmann would not write).
inline std::string with_header_text(const std::string& b, const std::string& text) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xFF));
  return out + text + b.substr(8 + header_len(b));
}

}  // namespace grpo::test
