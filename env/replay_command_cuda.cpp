// `grpo replay` in the gpu and simt flavours: both backends.
#include "env/replay.h"

namespace grpo {
Command add_replay_command(CLI::App& app) { return make_replay_command(app, replay_cuda); }
}  // namespace grpo
