// `grpo replay` in the host flavour: no device backend exists (see replay_command_cuda.cpp for
// the gpu and simt flavours, where grpo_cuda provides it; grpo_core cannot call into grpo_cuda).
#include "env/replay.h"

#if !defined(GRPO_HAVE_CUDA)
namespace grpo {
Command add_replay_command(CLI::App& app) { return make_replay_command(app, nullptr); }
}  // namespace grpo
#endif
