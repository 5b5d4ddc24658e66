// Error kinds that reach main. A UsageError is the user's to fix (bad flag, bad input file):
// one line, exit code 2, nothing written. Anything else is ours or the machine's: exit code 1.
#pragma once
#include <stdexcept>

namespace grpo {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace grpo
