// Checks on the memory accesses of kernels. The .cu translation units of the simt flavour are
// compiled with GCC's -fsanitize=thread, which calls __tsan_readN/__tsan_writeN/atomic hooks
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
// Blocks of one thread-block cluster are ordered by the cluster barriers between them.
// Each shadow cell keeps the last write and the last read (shared memory: also the last read by
// another warp), so a race whose other side is an older read may be missed; nothing is reported
// that did not happen.
#include <cxxabi.h>
#include <cerrno>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#include "simt/sanitizer.h"

namespace simt::detail {
namespace {

// Set while a kernel thread runs (and checks are on): the only test on a host thread's path.
__attribute__((tls_model("initial-exec"))) thread_local bool t_active = false;

int g_checks = -1;  // -1: not read from SIMT_CHECKS yet
bool checks_on() {
  if (g_checks < 0) {
    const char* e = std::getenv("SIMT_CHECKS");
    g_checks = e && std::strcmp(e, "0") == 0 ? 0 : 1;
  }
  return g_checks != 0;
}

// One recorded access. epoch 0 means none.
struct Access {
  uint32_t epoch = 0, tid = 0, clock = 0, mask = 0;  // mask: bytes of the word (global) or 1 (shared)
  const void* pc = nullptr;
};
struct SharedCell {  // one byte of shared memory
  // The last read, and the last one before it by another warp: a later write by any thread
  // then conflicts with at least one of them if reads came from two warps.
  Access w, r, r_other;
  uint32_t written = 0;  // block epoch of the first write in the running block
};
struct GlobalCell {  // one 4-byte word of the device arena
  Access w, r;
};

// ---- the launch and block being run ----
const KernelLaunch* g_k = nullptr;
size_t g_nthreads = 0, g_block = 0;
uint32_t g_epoch = 0;                        // bumped at every launch, block and barrier: the current interval
uint32_t g_launch_epoch = 0;                 // first epoch of the running launch
uint32_t g_block_epoch = 0;                  // first epoch of the running block
unsigned g_cur = 0;                          // linear index of the running thread
std::vector<std::array<uint32_t, 32>> g_vc;  // per thread: the clocks of its warp's lanes it has seen
unsigned g_countdown = 1;                    // accesses until the next seeded switch
size_t g_cluster = 1;                        // blocks per cluster in the running launch
// An overlapped launch (KernelLaunch::overlapped) right after a kernel: the previous launch's
// epochs, and which threads of the running block have called grid_dependency_wait.
bool g_overlapped = false;
uint32_t g_previous_launch_epoch = 0;
std::vector<uint8_t> g_waited;
uint32_t g_cluster_epoch = 0;   // the epoch the last cluster barrier released
bool g_cluster_synced = false;  // the running cluster passed a cluster barrier

// ---- shared memory: static ranges then the dynamic arena, one flat shadow ----
struct Span {
  uintptr_t lo, hi;
  size_t shadow;  // index of lo's cell
  const char* what;
};
std::vector<Span> g_static_spans, g_spans;  // g_spans: the static ones plus this block's dynamic arena
bool g_static_found = false;
size_t g_static_cells = 0;
// Bounding boxes of the static variables and of the dynamic arena: the fast test in access().
uintptr_t g_static_lo = 0, g_static_hi = 0, g_dyn_lo = 0, g_dyn_hi = 0;
std::vector<SharedCell> g_sshadow;

// ---- the other blocks of a running cluster, parked (slot = rank) while one block runs ----
struct ParkedBlock {  // what san_block_begin set up for one block of a cluster
  size_t block = 0;
  uint32_t block_epoch = 0;
  std::vector<std::array<uint32_t, 32>> vc;
  std::vector<Span> spans;
  uintptr_t dyn_lo = 0, dyn_hi = 0;
  std::vector<SharedCell> sshadow;
};
std::vector<ParkedBlock> g_parked;
// Per slot: the last access another block made to its arena in the running cluster (epoch 0:
// none), for the report when the slot's block exits before a cluster barrier orders it.
std::vector<Access> g_remote_touch;

// ---- global memory shadow: one cell per 4-byte word of the arena, mapped on demand ----
GlobalCell* g_gshadow = nullptr;

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
  if (other_block != g_block)  // another block: ordered only by a cluster barrier of both
    return g_cluster > 1 && other_block / g_cluster == g_block / g_cluster && old.epoch < g_cluster_epoch;
  if (old.epoch != g_epoch) return true;  // this block, before a barrier
  const unsigned other = old.tid % g_nthreads;
  if (other / 32 != g_cur / 32) return false;
  return g_vc[g_cur][other % 32] >= old.clock;
}

Access now_access(uint32_t mask, const void* pc) {
  Access a;
  a.epoch = g_epoch, a.tid = global_tid(g_cur), a.clock = g_vc[g_cur][g_cur % 32], a.mask = mask, a.pc = pc;
  return a;
}

bool conflicts(const Access& old, const Access& now) {
  return old.epoch >= g_launch_epoch && old.tid != now.tid && (old.mask & now.mask) && !ordered(old);
}
// Shared memory belongs to the block: only this block's current interval can conflict, and
// (distributed shared memory) another block of its cluster since the last cluster barrier. A
// record of a block of another cluster is an earlier cluster's, which ran in this slot before.
bool conflicts_shared(const Access& old, const Access& now) {
  const size_t other_block = old.tid / g_nthreads;
  if (other_block != g_block)
    return old.epoch >= g_launch_epoch && other_block / g_cluster == g_block / g_cluster && !ordered(old);
  return old.epoch == g_epoch && old.tid != now.tid && !ordered(old);
}

std::string where_global(uintptr_t a, size_t n, bool write) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s of %zu bytes at 0x%" PRIxPTR, write ? "write" : "read", n, a);
  return buf;
}

// An overlapped kernel's thread before its grid_dependency_wait: an access to a word the
// previous kernel wrote (or, for a write, read) could run beside that kernel on a GPU.
void check_before_wait(uintptr_t a, size_t n, bool write, const void* pc) {
  const auto previous = [](const Access& x) { return x.epoch >= g_previous_launch_epoch && x.epoch < g_launch_epoch; };
  for (uintptr_t w = a & ~uintptr_t{3}; w < a + n; w += 4) {
    const GlobalCell& c = g_gshadow[(w - g_arena_lo) / 4];
    const Access* before = previous(c.w) ? &c.w : (write && previous(c.r) ? &c.r : nullptr);
    if (before)
      report("access before wait_for_previous_kernel() to global memory the kernel before it " +
                 std::string(before == &c.w ? "wrote" : "read") + ": " + where_global(a, n, write),
             now_access(0, pc), write ? "write" : "read", before,
             before == &c.w ? "write by the kernel before (launch_overlapped lets them overlap)"
                            : "read by the kernel before (launch_overlapped lets them overlap)",
             "a kernel launched overlapped may start while the kernel before it runs: it waits for it "
             "(wait_for_previous_kernel) before it touches what that kernel writes or reads\n");
  }
}

void global_access(uintptr_t a, size_t n, bool write, bool atomic, const void* pc) {
  static uintptr_t c_lo = 1, c_hi = 0;  // the allocation of the previous access
  if (a < c_lo || a + n > c_hi) {
    if (!device_allocation_of(a, n, &c_lo, &c_hi)) {
      c_lo = 1, c_hi = 0;
      Access now = now_access(0, pc);
      report("out-of-bounds global memory access: " + where_global(a, n, write) + ", " + nearest_device_allocation(a),
             now, write ? "write" : "read", nullptr, nullptr, nullptr);
    }
  }
  if (atomic) return;
  if (!g_gshadow) {
    const size_t bytes = (g_arena_hi - g_arena_lo) / 4 * sizeof(GlobalCell);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      fatal("cannot reserve " + std::to_string(bytes >> 30) +
            " GiB of address space for the shadow of device memory (" + std::strerror(errno) +
            "); SIMT_CHECKS=0 runs without the checks");
    g_gshadow = static_cast<GlobalCell*>(p);
  }
  if (g_overlapped && !g_waited[g_cur]) check_before_wait(a, n, write, pc);
  for (uintptr_t w = a & ~uintptr_t{3}; w < a + n; w += 4) {
    const uintptr_t b0 = std::max(w, a), b1 = std::min(w + 4, a + n);
    const uint32_t mask = ((1u << (b1 - b0)) - 1) << (b0 - w);
    GlobalCell& c = g_gshadow[(w - g_arena_lo) / 4];
    const Access now = now_access(mask, pc);
    const char* hint =
        "threads of different blocks are never ordered within one launch (but by a cluster barrier "
        "of a cluster of both); threads of one block are ordered by __syncthreads, lanes of a warp "
        "by a warp collective of both\n";
    if (conflicts(c.w, now))
      report("data race on global memory: " + where_global(a, n, write), now, write ? "write" : "read", &c.w,
             "earlier write", hint);
    if (write) {
      if (conflicts(c.r, now))
        report("data race on global memory: " + where_global(a, n, write), now, "write", &c.r, "earlier read", hint);
      c.w = now;
    } else {
      c.r = now;
    }
  }
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

const Span* shared_span(uintptr_t a) {
  for (const Span& s : g_spans)
    if (a >= s.lo && a < s.hi) return &s;
  return nullptr;
}

// One byte's checks and record for the running thread's access to a block's shared memory: its
// own block's, or (remote) another block's of its cluster through distributed shared memory;
// owner_epoch is the owning block's first epoch. words() describes the access, for a report only.
template <class Words>
void shared_cell(SharedCell& c, const Access& now, bool read, bool write, bool atomic, uint32_t owner_epoch,
                 bool remote, const Words& words) {
  if (read && c.written != owner_epoch)
    report(std::string(remote ? "distributed shared memory read before any thread wrote it: "
                              : "shared memory read before any thread of this block wrote it: ") +
               words(),
           now, "read", nullptr, nullptr, "shared memory starts undefined in every block (poisoned with 0xFF here)\n");
  if (!atomic) {
    const auto race = [&](const Access& old, const char* now_kind, const char* old_kind) {
      const bool cluster = remote || old.tid / g_nthreads != g_block;  // another block's side
      report(
          std::string(cluster ? "data race on distributed shared memory: " : "data race on shared memory: ") + words(),
          now, now_kind, &old, old_kind,
          cluster ? "blocks of a cluster are ordered by a cluster barrier of both; within a block, threads by "
                    "__syncthreads\n"
                  : "threads of a block are ordered by __syncthreads, lanes of a warp by a warp collective "
                    "of both (__syncwarp)\n");
    };
    if (conflicts_shared(c.w, now)) race(c.w, write ? "write" : "read", "earlier write");
    if (write && conflicts_shared(c.r, now)) race(c.r, "write", "earlier read");
    if (write && conflicts_shared(c.r_other, now)) race(c.r_other, "write", "earlier read");
  }
  if (write) c.w = now, c.written = owner_epoch;
  if (read && !write) {
    const bool other_block = c.r.tid / g_nthreads != g_block;  // a read through distributed shared memory
    if ((other_block && c.r.epoch >= g_cluster_epoch) ||
        (!other_block && c.r.epoch == g_epoch && (c.r.tid % g_nthreads) / 32 != g_cur / 32))
      c.r_other = c.r;
    c.r = now;
  }
}

void shared_access(uintptr_t a, size_t n, bool read, bool write, bool atomic, const void* pc) {
  for (uintptr_t b = a; b < a + n; ++b) {
    const Span* s = shared_span(b);
    if (!s && g_dyn_hi && b + kSharedRedzone >= g_dyn_lo && b < g_dyn_hi + kSharedRedzone) {
      const long off = long(b) - long(g_dyn_lo);
      report("out-of-bounds shared memory access: " + std::string(write ? "write" : "read") + " of " +
                 std::to_string(n) + " bytes at dynamic shared memory " + (off < 0 ? "- " : "+ ") +
                 std::to_string(off < 0 ? -off : off) + ", outside the arena of " +
                 std::to_string(g_dyn_hi - g_dyn_lo) + " bytes the launch gave",
             now_access(1, pc), write ? "write" : "read", nullptr, nullptr, nullptr);
    }
    if (!s) continue;
    SharedCell& c = g_sshadow[s->shadow + (b - s->lo)];
    // Only a report needs the words (demangling on every access would cost more than the checks).
    shared_cell(c, now_access(1, pc), read, write, atomic, g_block_epoch, false, [&] {
      return std::string(write && !read  ? "write"
                         : read && write ? "update"
                                         : "read") +
             " of " + std::to_string(n) + " bytes at " + demangled(s->what) + " + " + std::to_string(b - s->lo);
    });
  }
}

// Distributed shared memory: an access to the dynamic arena (or its red zones) of another block of
// the running cluster, through an address cluster_map_shared gave. Checked like the block's own
// accesses, against that block's parked shadow: bounds, a read of a byte nobody wrote, and races
// with the owner and the cluster's other blocks since the last cluster barrier, an access before
// the cluster's first barrier (the owner may not have started) or after the owner exited. False
// when the address is no other block's.
bool remote_shared_access(uintptr_t a, size_t n, bool read, bool write, bool atomic, const void* pc) {
  for (size_t slot = 0; slot < g_cluster && slot < g_parked.size(); ++slot) {
    ParkedBlock& p = g_parked[slot];
    if (p.block == g_block || p.dyn_hi == 0 || a >= p.dyn_hi + kSharedRedzone || a + n + kSharedRedzone <= p.dyn_lo)
      continue;
    const auto what = [&](uintptr_t b) {  // for a report only: building it costs more than the checks
      const std::string block = thread_name(p.block, 0);
      const long off = long(b) - long(p.dyn_lo);
      return std::string(write && !read  ? "write"
                         : read && write ? "update"
                                         : "read") +
             " of " + std::to_string(n) + " bytes at the dynamic shared memory of " +
             block.substr(0, block.find(" thread")) + " " + (off < 0 ? "- " : "+ ") +
             std::to_string(off < 0 ? -off : off);
    };
    if (g_remote_touch.size() <= slot) g_remote_touch.resize(slot + 1);
    g_remote_touch[slot] = now_access(1, pc);
    if (!g_cluster_synced)
      report("distributed shared memory access before the cluster's first barrier: " + what(a), now_access(1, pc),
             write ? "write" : "read", nullptr, nullptr,
             "the other blocks of a cluster may not have started yet: a cluster barrier first\n");
    if (cluster_block_exited(slot))
      report("distributed shared memory access to a block that has exited: " + what(a), now_access(1, pc),
             write ? "write" : "read", nullptr, nullptr,
             "a block's shared memory ends with it: a cluster barrier before it exits keeps it for the others\n");
    for (uintptr_t b = a; b < a + n; ++b) {
      const Access now = now_access(1, pc);
      if (b < p.dyn_lo || b >= p.dyn_hi)
        report("out-of-bounds distributed shared memory access: " + what(b) + ", outside the arena of " +
                   std::to_string(p.dyn_hi - p.dyn_lo) + " bytes the launch gave",
               now, write ? "write" : "read", nullptr, nullptr, nullptr);
      shared_cell(p.sshadow[g_static_cells + (b - p.dyn_lo)], now, read, write, atomic, p.block_epoch, true,
                  [&] { return what(b); });
    }
    return true;
  }
  return false;
}

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

void san_launch_end() { g_k = nullptr; }

void san_launch_begin(const KernelLaunch& k) {
  g_k = &k;
  g_nthreads = size_t(k.block.x) * k.block.y * k.block.z;
  g_previous_launch_epoch = g_launch_epoch;
  g_overlapped = k.overlapped && previous_node_was_kernel() && g_previous_launch_epoch > 0;
  g_launch_epoch = ++g_epoch;
  g_cluster = k.cluster;
  g_cluster_epoch = 0;
  g_vc.assign(g_nthreads, {});
  if (!g_static_found) {
    g_static_found = true;
    g_static_lo = ~uintptr_t{0};
    for (const SharedRange& r : static_shared_ranges()) {
      g_static_spans.push_back(Span{r.lo, r.hi, g_static_cells, r.name.c_str()});
      g_static_cells += r.hi - r.lo;
      g_static_lo = std::min(g_static_lo, r.lo), g_static_hi = std::max(g_static_hi, r.hi);
    }
  }
}

void san_block_begin(size_t block_linear, unsigned char* dyn, size_t dyn_bytes) {
  g_block = block_linear;
  if (block_linear % g_cluster == 0) {  // a new cluster's first block
    g_cluster_synced = false;
    g_remote_touch.assign(g_cluster, Access{});
  }
  g_block_epoch = ++g_epoch;
  if (g_overlapped) g_waited.assign(g_nthreads, 0);
  // Each lane's own clock starts at 1: an access is ordered before another lane's only once a
  // collective of both raised that lane's view of it.
  g_vc.resize(g_nthreads);
  for (size_t i = 0; i < g_vc.size(); ++i) g_vc[i].fill(0), g_vc[i][i % 32] = 1;
  g_spans = g_static_spans;
  g_dyn_lo = g_dyn_hi = 0;
  if (dyn_bytes > 0) {
    g_dyn_lo = reinterpret_cast<uintptr_t>(dyn), g_dyn_hi = g_dyn_lo + dyn_bytes;
    g_spans.push_back(Span{g_dyn_lo, g_dyn_hi, g_static_cells, "dynamic shared memory"});
  }
  if (g_sshadow.size() < g_static_cells + dyn_bytes) g_sshadow.resize(g_static_cells + dyn_bytes);
}

void san_barrier_released() { ++g_epoch; }

void grid_dependency_wait() {
  if (g_overlapped && g_k) g_waited[g_cur] = 1;
}

void san_block_park(size_t slot) {
  if (g_parked.size() <= slot) g_parked.resize(slot + 1);
  ParkedBlock& p = g_parked[slot];
  p.block = g_block, p.block_epoch = g_block_epoch, p.dyn_lo = g_dyn_lo, p.dyn_hi = g_dyn_hi;
  std::swap(p.vc, g_vc);
  std::swap(p.spans, g_spans);
  std::swap(p.sshadow, g_sshadow);
}

void san_block_resume(size_t slot) {
  ParkedBlock& p = g_parked[slot];
  g_block = p.block, g_block_epoch = p.block_epoch, g_dyn_lo = p.dyn_lo, g_dyn_hi = p.dyn_hi;
  std::swap(p.vc, g_vc);
  std::swap(p.spans, g_spans);
  std::swap(p.sshadow, g_sshadow);
}

void san_block_exited(size_t slot) {
  if (!checks_on() || slot >= g_remote_touch.size()) return;
  const Access& touch = g_remote_touch[slot];
  if (touch.epoch >= g_launch_epoch && touch.epoch >= g_cluster_epoch) {
    const Access now = now_access(1, g_k->func);  // the exiting thread; no code address of its own
    report(
        "a block exited while another block of its cluster accessed its shared memory with no cluster barrier "
        "between",
        now, "exit", &touch, "access (distributed shared memory)",
        "a block's shared memory ends with it: a cluster barrier before it exits keeps it for the others\n");
  }
}

void san_cluster_released() {
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

void san_enter(unsigned linear) {
  g_cur = linear;
  t_active = checks_on();
}
void san_leave() { t_active = false; }

void san_device_freed(uintptr_t lo, size_t n) {
  if (g_gshadow) madvise(&g_gshadow[(lo - g_arena_lo) / 4], n / 4 * sizeof(GlobalCell), MADV_DONTNEED);
}

}  // namespace simt::detail

void simt::check_vector_access(const void* p, size_t bytes) {
  using namespace detail;
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
  const bool was = detail::checks_on();
  detail::g_checks = on;
  return was;
}

// ---- the hooks GCC's -fsanitize=thread instrumentation calls ----
using simt::detail::access;
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
