// Durable file writes for checkpoints and rewritten metrics: a crash or a full disk never leaves a
// half-written file under the final name, and every failure (write, fsync, close, rename) is
// reported rather than ignored.
#pragma once
#include <string>

namespace grpo {

// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename over
// `path`, fsync of the directory. On failure the temporary file is removed, `path` is left as it
// was, and std::runtime_error names the path and the system's reason (e.g. "No space left on
// device").
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace grpo
