// libFuzzer harness: the checkpoint loader that --resume, play and eval use
// (engine/checkpoint/checkpoint.h). The input is written to a file in a private temporary folder
// (the loader reads a path) and loaded. A refusal (UsageError) is normal; anything else thrown,
// a sanitizer report, a stack overflow or an allocation past -malloc_limit_mb is a finding. A
// checkpoint that loads has its game checked as play and eval do.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/errors.h"
#include "engine/checkpoint/checkpoint.h"

namespace {

std::string g_path;

}  // namespace

namespace {

// The private folder, removed when the run ends normally (a crash leaves it, beside its report).
std::string g_dir;
void remove_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/grpo-fuzz-ckpt-XXXXXX";
  if (!mkdtemp(dir.data())) {
    std::perror("fuzz_checkpoint: mkdtemp");
    std::abort();
  }
  g_dir = dir;
  std::atexit(remove_dir);
  g_path = dir + "/in.safetensors";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(g_path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror("fuzz_checkpoint: writing the input");
    std::abort();
  }
  try {
    grpo::Checkpoint ck = grpo::load_checkpoint(g_path);
    ck.config.game.validate();
    ck.config.validate();
  } catch (const grpo::UsageError&) {
  }
  return 0;
}
