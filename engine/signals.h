// Ctrl-C during training: the first SIGINT asks the trainer to stop after the current epoch (it
// then writes a checkpoint and exits 130); a second SIGINT ends the process at once with 130.
// Checkpoints are written atomically, so the last good one survives even that.
#pragma once

namespace grpo {

// Installs the handler (idempotent). Call once the run is about to start.
void install_sigint_handler();
// Restores the default action (e.g. after the run, before writing the final summary).
void remove_sigint_handler();
// Whether a first SIGINT arrived since install_sigint_handler().
bool sigint_requested();

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, what a shell reports for Ctrl-C

}  // namespace grpo
