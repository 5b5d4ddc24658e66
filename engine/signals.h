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

// The temporary file being written, which a second signal removes before the process exits (one
// at a time; the path must stay valid while the object lives; one over 4 KiB is not removed).
// Creating it and renaming it onto its final name are each one step that a second signal never
// splits, whichever thread it lands on: otherwise the checkpoint writer's thread could create the
// file just after the handler, on another thread, had removed it, and leave it behind.
class PartialFile {
 public:
  PartialFile() = default;
  ~PartialFile();  // forgets the path
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  // Names `path` as the partial file and open()s it with `flags` and `mode`; returns open()'s
  // result (errno as open() leaves it).
  int create(const char* path, int flags, unsigned mode);
  // rename()s the partial file onto `to` and forgets it; returns rename()'s result.
  int rename_onto(const char* to);

 private:
  const char* path_ = nullptr;
};

}  // namespace grpo
