// The fiber-switch announcements to AddressSanitizer (asan_fibers.h); empty outside ASan builds.
#include "simt/asan_fibers.h"

#if defined(SIMT_ASAN_FIBERS)
#include <sanitizer/asan_interface.h>

#include <vector>

namespace simt::detail {
namespace {

struct AsanFibers {
  const void* allocated = nullptr;     // the stack PooledStack handed out last
  std::vector<const void*> stack;      // each thread's stack (lowest address), by linear index
  std::vector<void*> fake;             // each suspended thread's fake-stack handle
  void* sched_fake = nullptr;          // the scheduler's, while a thread runs
  const void* sched_bottom = nullptr;  // the scheduler's stack
  size_t sched_size = 0;
};
AsanFibers g_asan;

}  // namespace

// A pooled stack keeps the poison of frames that never returned (a fiber's entry frames).
void asan_stack_allocated(void* base, size_t bytes) {
  ASAN_UNPOISON_MEMORY_REGION(base, bytes);
  g_asan.allocated = base;
}
void asan_fiber_created(unsigned i) {
  if (g_asan.stack.size() <= i) g_asan.stack.resize(i + 1), g_asan.fake.resize(i + 1);
  g_asan.stack[i] = g_asan.allocated;
}
void asan_to_thread(unsigned i, size_t bytes) {
  __sanitizer_start_switch_fiber(&g_asan.sched_fake, g_asan.stack[i], bytes);
}
void asan_back_in_scheduler() { __sanitizer_finish_switch_fiber(g_asan.sched_fake, nullptr, nullptr); }
void asan_thread_started() { __sanitizer_finish_switch_fiber(nullptr, &g_asan.sched_bottom, &g_asan.sched_size); }
// exiting: the thread never comes back, so its fake stack is dropped.
void asan_to_scheduler(unsigned i, bool exiting) {
  __sanitizer_start_switch_fiber(exiting ? nullptr : &g_asan.fake[i], g_asan.sched_bottom, g_asan.sched_size);
}
void asan_back_in_thread(unsigned i) {
  __sanitizer_finish_switch_fiber(g_asan.fake[i], &g_asan.sched_bottom, &g_asan.sched_size);
}

}  // namespace simt::detail
#endif
