// Stopping a training run from outside: Ctrl-C (SIGINT) or SIGTERM (what kill, systemd, Slurm
// and container runtimes send). The first signal asks the trainer to stop after the current
// epoch; it then writes a checkpoint and exits 128 + that signal's number (130 for SIGINT, 143
// for SIGTERM). A second signal of either kind ends the process at once, with 128 + its number.
// Checkpoints are written atomically, so the last good one survives even that, and the temporary
// file of a write in progress is removed on the way out.
#pragma once

namespace grpo {

// Installs the handlers for SIGINT and SIGTERM (idempotent). Call once the run is about to start.
void install_stop_handlers();
// Restores the default actions (e.g. after the run, before writing the final summary).
void remove_stop_handlers();
// The first stop signal that arrived since install_stop_handlers(), or 0.
int stop_signal();
// The exit code for a run stopped by `signo`: 128 + signo, what a shell reports.
inline int stopped_exit_code(int signo) { return 128 + signo; }

// While alive, names the temporary file being written, which a second signal removes before
// the process exits (one at a time; the path must stay valid and under 4 KiB).
class PartialFile {
 public:
  explicit PartialFile(const char* path);
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
};

}  // namespace grpo
