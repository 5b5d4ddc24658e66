#include "engine/signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace grpo {

namespace {

// The first stop signal. Lock-free atomics are async-signal-safe, and handlers may run on any
// thread (the checkpoint writer's too), so the first and second signal are told apart by one
// compare-exchange.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
char g_partial[4096];
volatile sig_atomic_t g_has_partial = 0;  // set only once g_partial holds a whole path
// Held across a PartialFile step (create, rename). atomic_flag is always lock-free, so the handler
// may spin on it; the step's own thread has the stop signals blocked, so the handler never spins
// on the thread it interrupted.
std::atomic_flag g_step = ATOMIC_FLAG_INIT;

void on_stop(int signo) {
  int first = 0;
  if (!g_signal.compare_exchange_strong(first, signo)) {
    // unlink and _exit are async-signal-safe; _exit skips atexit and buffers on purpose
    while (g_step.test_and_set(std::memory_order_acquire)) {
    }  // never released: no other thread creates or renames a partial file again
    if (g_has_partial) (void)unlink(g_partial);
    _exit(stopped_exit_code(signo));
  }
  const int saved_errno = errno;  // the interrupted code may be about to read it
  static const char interrupt[] =
      "\ngrpo: interrupt: finishing this epoch and writing a checkpoint (Ctrl-C again to quit now)\n";
  static const char term[] =
      "\ngrpo: SIGTERM: finishing this epoch and writing a checkpoint (a second signal quits now)\n";
  if (signo == SIGTERM)
    (void)!write(STDERR_FILENO, term, sizeof term - 1);
  else
    (void)!write(STDERR_FILENO, interrupt, sizeof interrupt - 1);
  errno = saved_errno;
}

void set_action(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  // Both stop signals are blocked while either handler runs: a second one nested in the handler
  // would otherwise spin forever on the g_step its own outer frame holds.
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;  // blocking calls resume; the trainer polls the flag between epochs
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void install_stop_handlers() {
  g_signal.store(0);
  set_action(on_stop);
}

void remove_stop_handlers() { set_action(SIG_DFL); }

int stop_signal() { return g_signal.load(); }

namespace {

// One PartialFile step: the stop signals blocked on this thread, and g_step held.
class Step {
 public:
  Step() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &saved_);
    while (g_step.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Step() {
    g_step.clear(std::memory_order_release);
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);  // a signal that came meanwhile is handled here
  }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace

int PartialFile::create(const char* path, int flags, unsigned mode) {
  const Step step;
  path_ = path;
  g_has_partial = 0;
  if (std::strlen(path) < sizeof g_partial) {  // a longer one is left behind by a second signal
    std::strcpy(g_partial, path);
    g_has_partial = 1;
  }
  return ::open(path, flags, mode);
}

int PartialFile::rename_onto(const char* to) {
  const Step step;
  const int rc = ::rename(path_, to);
  g_has_partial = 0;
  return rc;
}

PartialFile::~PartialFile() {
  const Step step;
  g_has_partial = 0;
}

}  // namespace grpo
