// libFuzzer harness: the `grpo replay` document (env/replay.h). A refused document (UsageError,
// the one-line exit-2 path) is normal; anything else thrown, a sanitizer report, a stack overflow
// or an allocation past -malloc_limit_mb is a finding. A document that parses is also run on the
// host rules and every frame formatted, as `grpo replay` does.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "env/replay.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::ostringstream out;
  try {
    grpo::run_replay(in, out, grpo::replay_host);
  } catch (const grpo::UsageError&) {
  }
  return 0;
}
