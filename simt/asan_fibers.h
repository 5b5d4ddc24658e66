// AddressSanitizer and the emulator's fibers (scheduler.cpp). ASan knows one stack per OS
// thread. Unannounced, a switch onto a fiber's heap stack reads as stack corruption, and a
// fiber's frames are never cleaned, so every switch between the scheduler and a thread says where
// it goes (the sanitizer interface's start/finish pair). The scheduler's own stack is learnt from
// the first switch into each thread. Outside an ASan build every function is an empty inline.
#pragma once
#include <cstddef>

// GCC says __SANITIZE_ADDRESS__, clang __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define SIMT_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIMT_ASAN_FIBERS 1
#endif
#endif

namespace simt::detail {

#if defined(SIMT_ASAN_FIBERS)
// A pooled stack was handed out (it keeps the poison of frames that never returned).
void asan_stack_allocated(void* base, size_t bytes);
// Thread i's fiber was created on the stack handed out last.
void asan_fiber_created(unsigned i);
// The scheduler resumes thread i / is back after it.
void asan_to_thread(unsigned i, size_t bytes);
void asan_back_in_scheduler();
// First code a thread's fiber runs.
void asan_thread_started();
// Thread i yields to the scheduler (exiting: it never comes back) / resumes.
void asan_to_scheduler(unsigned i, bool exiting);
void asan_back_in_thread(unsigned i);
#else
inline void asan_stack_allocated(void*, size_t) {}
inline void asan_fiber_created(unsigned) {}
inline void asan_to_thread(unsigned, size_t) {}
inline void asan_back_in_scheduler() {}
inline void asan_thread_started() {}
inline void asan_to_scheduler(unsigned, bool) {}
inline void asan_back_in_thread(unsigned) {}
#endif

}  // namespace simt::detail
