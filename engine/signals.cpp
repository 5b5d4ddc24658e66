#include "engine/signals.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace grpo {

namespace {

volatile sig_atomic_t g_signal = 0;
char g_partial[4096];
volatile sig_atomic_t g_has_partial = 0;  // set only once g_partial holds a whole path

void on_stop(int signo) {
  if (g_signal != 0) {  // unlink and _exit are async-signal-safe; _exit skips atexit and buffers on purpose
    if (g_has_partial) (void)unlink(g_partial);
    _exit(stopped_exit_code(signo));
  }
  g_signal = signo;
  static const char interrupt[] =
      "\ngrpo: interrupt: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n";
  static const char term[] =
      "\ngrpo: SIGTERM: finishing this epoch and writing a checkpoint (a second signal quits now)\n";
  if (signo == SIGTERM)
    (void)!write(STDERR_FILENO, term, sizeof term - 1);
  else
    (void)!write(STDERR_FILENO, interrupt, sizeof interrupt - 1);
}

void set_action(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls resume; the trainer polls the flag between epochs
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void install_stop_handlers() {
  g_signal = 0;
  set_action(on_stop);
}

void remove_stop_handlers() { set_action(SIG_DFL); }

int stop_signal() { return g_signal; }

PartialFile::PartialFile(const char* path) {
  g_has_partial = 0;
  if (std::strlen(path) >= sizeof g_partial) return;  // too long to keep: left behind, as before
  std::strcpy(g_partial, path);
  g_has_partial = 1;
}

PartialFile::~PartialFile() { g_has_partial = 0; }

}  // namespace grpo
