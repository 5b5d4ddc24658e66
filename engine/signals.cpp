#include "engine/signals.h"

#include <signal.h>
#include <unistd.h>

namespace grpo {

namespace {

volatile sig_atomic_t g_count = 0;

void on_sigint(int) {
  if (g_count > 0) _exit(kExitInterrupted);  // async-signal-safe; skips atexit and buffers on purpose
  g_count = 1;
  static const char msg[] = "\ngrpo: interrupt: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

void install_sigint_handler() {
  g_count = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls resume; the trainer polls the flag between epochs
  sigaction(SIGINT, &sa, nullptr);
}

void remove_sigint_handler() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

bool sigint_requested() { return g_count != 0; }

}  // namespace grpo
