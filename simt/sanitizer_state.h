// What the emulator's memory checks share between their three files: sanitizer.cpp (the hooks,
// the scheduler's events and the ordering rule), sanitizer_global.cpp (device memory) and
// sanitizer_shared.cpp (shared and distributed shared memory). Internal to those files.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "simt/sanitizer.h"

namespace simt::detail::san {

// One recorded access. epoch 0 means none.
struct Access {
  uint32_t epoch = 0, tid = 0, clock = 0, mask = 0;  // mask: bytes of the word (global) or 1 (shared), and kGap
  const void* pc = nullptr;
};
// In Access::mask: made between its thread's arrive and wait at a split cluster barrier.
constexpr uint32_t kGap = 1u << 31;
inline bool in_gap(const Access& a) { return (a.mask & kGap) != 0; }

// ---- the launch and block being run (sanitizer.cpp) ----
extern const KernelLaunch* g_k;
extern size_t g_nthreads, g_block;
extern uint32_t g_epoch;                            // bumped at every launch, block and barrier: the current interval
extern uint32_t g_launch_epoch;                     // first epoch of the running launch
extern uint32_t g_block_epoch;                      // first epoch of the running block
extern unsigned g_cur;                              // linear index of the running thread
extern std::vector<std::array<uint32_t, 32>> g_vc;  // per thread: the clocks of its warp's lanes it has seen
extern size_t g_cluster;                            // blocks per cluster in the running launch
// An overlapped launch (KernelLaunch::overlapped) right after a kernel: the previous launch's
// epochs, and which threads of the running block have called grid_dependency_wait.
extern bool g_overlapped;
extern uint32_t g_previous_launch_epoch;
extern std::vector<uint8_t> g_waited;
extern uint32_t g_cluster_epoch;       // the epoch the last cluster barrier released
extern uint32_t g_cluster_epoch_prev;  // the one the barrier before it released (0: none)
extern uint32_t g_sync_epoch;          // the epoch the running block's last __syncthreads released
extern bool g_cluster_synced;          // the running cluster passed a cluster barrier

// Bounding boxes of the static __shared__ variables and of the running block's dynamic arena
// (sanitizer_shared.cpp): the hooks' fast test for a shared-memory address.
extern uintptr_t g_static_lo, g_static_hi, g_dyn_lo, g_dyn_hi;

bool checks_on();
uint32_t global_tid(unsigned linear);
// Was `old` (same launch) ordered before the running thread's access?
bool ordered(const Access& old);
Access now_access(uint32_t mask, const void* pc);
// Reports (and stops the run) an access `now`, against `before` where there is one.
[[noreturn]] void report(const std::string& what, const Access& now, const char* now_kind, const Access* before,
                         const char* before_kind, const char* hint);

// ---- device memory (sanitizer_global.cpp) ----
void global_access(uintptr_t a, size_t n, bool write, bool atomic, const void* pc);
// The launch beginning at epoch g_launch_epoch belongs to the eager node running now.
void global_launch_begin(const void* func);

// ---- shared memory (sanitizer_shared.cpp) ----
void shared_launch_begin();  // finds the static __shared__ variables, once
void shared_block_begin(size_t block_linear, unsigned char* dyn, size_t dyn_bytes);
// The running block's own shared memory (static variables, the dynamic arena and its red zones).
void shared_access(uintptr_t a, size_t n, bool read, bool write, bool atomic, const void* pc);
// Another block's dynamic arena in the running cluster; false when the address is no block's.
bool remote_shared_access(uintptr_t a, size_t n, bool read, bool write, bool atomic, const void* pc);

}  // namespace simt::detail::san
