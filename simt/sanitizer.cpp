// Checks on the memory accesses of kernels: the hooks, the scheduler's events and the ordering
// rule here, device memory in sanitizer_global.cpp, shared memory in sanitizer_shared.cpp. The .cu translation units of
// the simt flavour are compiled with GCC's -fsanitize=thread, which calls __tsan_readN/__tsan_writeN/atomic hooks
// around every load and store; this file defines those hooks itself (no ThreadSanitizer runtime
// is linked). Outside a kernel thread a hook returns at once (one thread-local flag). Inside one:
//   - seeded switches: every few accesses the thread yields, so threads interleave mid-way;
//   - global memory (the device arena, memory.cpp): an access outside every live allocation is
//     reported; two threads of one launch touching a 4-byte word, one writing, neither atomic, and
//     not ordered (same block: a barrier between them, or a warp collective of both) are reported;
//   - shared memory (static __shared__ and the dynamic arena): the same race rule per byte within
//     a block, a read of a byte no thread of the block wrote yet, and an access just outside the
//     dynamic arena (its red zones);
//   - distributed shared memory (another block's dynamic arena in a cluster): the same checks
//     against the owner's shadow, plus races with the owner and the other blocks (a cluster
//     barrier orders them), and an access before the cluster's first barrier or to an exited block.
// Ordering: __syncthreads starts a new interval (epochs); inside one, lanes of a warp are ordered
// by the warp collectives they complete together, tracked with a 32-entry vector clock per thread.
// Blocks of one thread-block cluster are ordered by the cluster barriers between them; what a
// thread does between a split barrier's arrive and its wait, only by the barrier after that one
// (its arrive released the thread's earlier accesses, not these), or within its block by a
// __syncthreads.
// Each shadow cell keeps the last write and the last read (shared memory: also the last read by
// another warp), so a race whose other side is an older read may be missed; nothing is reported
// that did not happen.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "simt/sanitizer_state.h"

namespace simt::detail {
namespace san {
namespace {
// Set while a kernel thread runs (and checks are on): the only test on a host thread's path.
__attribute__((tls_model("initial-exec"))) thread_local bool t_active = false;
}  // namespace

int g_checks = -1;  // -1: not read from SIMT_CHECKS yet
bool checks_on() {
  if (g_checks < 0) {
    const char* e = std::getenv("SIMT_CHECKS");
    g_checks = e && std::strcmp(e, "0") == 0 ? 0 : 1;
  }
  return g_checks != 0;
}

const KernelLaunch* g_k = nullptr;
size_t g_nthreads = 0, g_block = 0;
uint32_t g_epoch = 0, g_launch_epoch = 0, g_block_epoch = 0;
unsigned g_cur = 0;
std::vector<std::array<uint32_t, 32>> g_vc;
unsigned g_countdown = 1;  // accesses until the next seeded switch
size_t g_cluster = 1;
bool g_overlapped = false;
uint32_t g_previous_launch_epoch = 0;
std::vector<uint8_t> g_waited;
uint32_t g_cluster_epoch = 0, g_cluster_epoch_prev = 0, g_sync_epoch = 0;
bool g_cluster_synced = false;
bool g_gap = false;  // the running thread is between a split cluster barrier's arrive and wait

uint32_t global_tid(unsigned linear) { return static_cast<uint32_t>(g_block * g_nthreads + linear); }

std::string who(uint32_t tid) { return thread_name(tid / g_nthreads, static_cast<unsigned>(tid % g_nthreads)); }

[[noreturn]] void report(const std::string& what, const Access& now, const char* now_kind, const Access* before,
                         const char* before_kind, const char* hint) {
  t_active = false;
  std::string r = what + " in kernel " + describe_code(g_k->func) + "\n";
  r += std::string("    ") + now_kind + " by " + who(now.tid) + "\n        at " + describe_code(now.pc) + "\n";
  if (before)
    r += std::string("    ") + before_kind + " by " + who(before->tid) + "\n        at " + describe_code(before->pc) +
         "\n";
  if (hint) r += std::string("    ") + hint;
  fatal(r);
}

// Was `old` (same launch) ordered before the running thread's access?
bool ordered(const Access& old) {
  const size_t other_block = old.tid / g_nthreads;
  // The cluster barriers have released `old` if the one after its interval has (the one after
  // that for an access between its thread's arrive and wait).
  const bool released = old.epoch < (in_gap(old) ? g_cluster_epoch_prev : g_cluster_epoch);
  if (other_block != g_block)  // another block: ordered only by a cluster barrier of both
    return g_cluster > 1 && other_block / g_cluster == g_block / g_cluster && released;
  if (!in_gap(old) && old.epoch != g_epoch) return true;  // this block, before a barrier
  if (in_gap(old) && (released || old.epoch < g_sync_epoch)) return true;
  const unsigned other = old.tid % g_nthreads;
  if (other / 32 != g_cur / 32) return false;
  return g_vc[g_cur][other % 32] >= old.clock;
}

Access now_access(uint32_t mask, const void* pc) {
  Access a;
  a.epoch = g_epoch, a.tid = global_tid(g_cur), a.clock = g_vc[g_cur][g_cur % 32], a.pc = pc;
  a.mask = g_gap ? mask | kGap : mask;
  return a;
}

namespace {

inline void access(const void* p, size_t n, bool read, bool write, bool atomic, const void* pc) {
  if (__builtin_expect(!t_active, 1)) return;
  if (--g_countdown == 0) {
    g_countdown = 1 + static_cast<unsigned>(schedule_random() % 64);
    t_active = false;
    yield_mid_way();
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a >= g_arena_lo && a < g_arena_hi)
    global_access(a, n, write, atomic, pc);
  else if ((a < g_static_hi && a + n > g_static_lo) ||
           (g_dyn_hi && a < g_dyn_hi + kSharedRedzone && a + n + kSharedRedzone > g_dyn_lo))
    shared_access(a, n, read, write, atomic, pc);
  else if (g_cluster > 1)
    remote_shared_access(a, n, read, write, atomic, pc);
}

}  // namespace
}  // namespace san

using namespace san;

void san_launch_end() { g_k = nullptr; }

void san_launch_begin(const KernelLaunch& k) {
  g_k = &k;
  g_nthreads = size_t(k.block.x) * k.block.y * k.block.z;
  g_previous_launch_epoch = g_launch_epoch;
  g_overlapped = k.overlapped && previous_node_was_kernel() && g_previous_launch_epoch > 0;
  g_launch_epoch = ++g_epoch;
  global_launch_begin(k.func);
  g_cluster = k.cluster;
  g_cluster_epoch = g_cluster_epoch_prev = 0;
  g_vc.assign(g_nthreads, {});
  shared_launch_begin();
}

void san_block_begin(size_t block_linear, unsigned char* dyn, size_t dyn_bytes) {
  g_block = block_linear;
  if (block_linear % g_cluster == 0) g_cluster_synced = false;  // a new cluster's first block
  g_block_epoch = ++g_epoch;
  g_sync_epoch = 0;
  if (g_overlapped) g_waited.assign(g_nthreads, 0);
  // Each lane's own clock starts at 1: an access is ordered before another lane's only once a
  // collective of both raised that lane's view of it.
  g_vc.resize(g_nthreads);
  for (size_t i = 0; i < g_vc.size(); ++i) g_vc[i].fill(0), g_vc[i][i % 32] = 1;
  shared_block_begin(block_linear, dyn, dyn_bytes);
}

void san_barrier_released() { g_sync_epoch = ++g_epoch; }

void grid_dependency_wait() {
  if (g_overlapped && g_k) g_waited[g_cur] = 1;
}

void san_cluster_released() {
  g_cluster_epoch_prev = g_cluster_epoch;
  g_cluster_epoch = ++g_epoch;
  g_cluster_synced = true;
}

void san_collective(unsigned warp, unsigned mask) {
  std::array<uint32_t, 32> join{};
  for (unsigned j = 0; j < 32; ++j)
    if ((mask >> j) & 1u)
      for (unsigned l = 0; l < 32; ++l) join[l] = std::max(join[l], g_vc[warp * 32 + j][l]);
  for (unsigned j = 0; j < 32; ++j)
    if ((mask >> j) & 1u) {
      g_vc[warp * 32 + j] = join;
      ++g_vc[warp * 32 + j][j];
    }
}

void san_enter(unsigned linear, bool arrived) {
  g_cur = linear;
  g_gap = arrived;
  t_active = checks_on();
}
void san_leave() { t_active = false; }

}  // namespace simt::detail

void simt::check_vector_access(const void* p, size_t bytes) {
  using namespace detail;
  using namespace detail::san;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (bytes == 0 || a % bytes == 0) return;
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "misaligned vector access: %zu bytes at 0x%" PRIxPTR
                " (a GPU faults unless it is a "
                "multiple of %zu)",
                bytes, a, bytes);
  if (!g_k) fatal(std::string(buf) + ", in host code");
  report(buf, now_access(0, static_cast<const char*>(__builtin_return_address(0)) - 1), "access", nullptr, nullptr,
         nullptr);
}

bool simt::set_checks(bool on) {
  const bool was = detail::san::checks_on();
  detail::san::g_checks = on;
  return was;
}

// ---- the hooks GCC's -fsanitize=thread instrumentation calls ----
using simt::detail::san::access;
#define SIMT_PC_ (static_cast<const char*>(__builtin_return_address(0)) - 1)
#define SIMT_RW_(N)                                                                                 \
  extern "C" void __tsan_read##N(void* p) { access(p, N, true, false, false, SIMT_PC_); }           \
  extern "C" void __tsan_write##N(void* p) { access(p, N, false, true, false, SIMT_PC_); }          \
  extern "C" void __tsan_unaligned_read##N(void* p) { access(p, N, true, false, false, SIMT_PC_); } \
  extern "C" void __tsan_unaligned_write##N(void* p) { access(p, N, false, true, false, SIMT_PC_); }
SIMT_RW_(1)
SIMT_RW_(2)
SIMT_RW_(4)
SIMT_RW_(8)
SIMT_RW_(16)
#undef SIMT_RW_
extern "C" void __tsan_read_range(void* p, unsigned long n) { access(p, n, true, false, false, SIMT_PC_); }
extern "C" void __tsan_write_range(void* p, unsigned long n) { access(p, n, false, true, false, SIMT_PC_); }
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// Atomics: the hook performs the operation (sequentially consistent) after the checks.
#define SIMT_ATOMICS_(N, T)                                                                       \
  extern "C" T __tsan_atomic##N##_load(const volatile T* a, int) {                                \
    access(const_cast<T*>(a), sizeof(T), true, false, true, SIMT_PC_);                            \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                               \
  extern "C" void __tsan_atomic##N##_store(volatile T* a, T v, int) {                             \
    access(const_cast<T*>(a), sizeof(T), false, true, true, SIMT_PC_);                            \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                     \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                             \
    access(const_cast<T*>(a), sizeof(T), false, true, true, SIMT_PC_);                            \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                            \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                            \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                            \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                             \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                            \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                           \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                               \
  extern "C" int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) { \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
  }                                                                                               \
  extern "C" int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {   \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
  }                                                                                               \
  extern "C" T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {       \
    access(const_cast<T*>(a), sizeof(T), true, true, true, SIMT_PC_);                             \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
    return c;                                                                                     \
  }
SIMT_ATOMICS_(8, uint8_t)
SIMT_ATOMICS_(16, uint16_t)
SIMT_ATOMICS_(32, uint32_t)
SIMT_ATOMICS_(64, uint64_t)
#undef SIMT_ATOMICS_
