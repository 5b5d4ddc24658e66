// `grpo replay` (engine/commands.h): the host backend always, the device backend where the
// flavour has CUDA (gpu, or the emulator in simt); in the host flavour --backend cuda is refused.
#include "env/replay.h"

namespace grpo {

Command add_replay_command(CLI::App& app) {
#if defined(GRPO_HAVE_CUDA)
  return make_replay_command(app, replay_cuda);
#else
  return make_replay_command(app, nullptr);
#endif
}

}  // namespace grpo
