#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/host/ops.h"
#include "tests/engine/golden.h"

namespace grpo::test {
namespace {

TEST(Golden, HostOpsMatchPyTorch) {
  std::vector<std::unique_ptr<char[]>> owned;
  Memory mem;
  mem.alloc = [&](size_t bytes) {
    owned.emplace_back(new char[bytes + 16]);
    return static_cast<void*>(owned.back().get());
  };
  mem.upload = [](void* d, const void* s, size_t n) { std::memcpy(d, s, n); };
  mem.download = mem.upload;
  HostOps ops(GameConfig{}, 1);
  run_golden(ops, mem);
}

}  // namespace
}  // namespace grpo::test
