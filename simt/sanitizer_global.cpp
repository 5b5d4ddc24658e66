// The emulator's checks on device memory (sanitizer.cpp has the rules they share): one shadow cell
// per 4-byte word of the arena (memory.cpp), mapped on demand, holding its last write and last
// read; an access outside every live allocation, a race between two threads of a launch, a race
// with an earlier launch that is not ordered before this one (another stream's, without an event
// or a synchronisation between them), and an overlapped kernel's access before its wait to what
// the kernel before it touched are reported.
#include <cerrno>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <sys/mman.h>

#include "simt/runtime_internal.h"
#include "simt/sanitizer_state.h"

namespace simt::detail {
namespace san {
namespace {

struct GlobalCell {  // one 4-byte word of the device arena
  Access w, r;
};
GlobalCell* g_gshadow = nullptr;

std::string where_global(uintptr_t a, size_t n, bool write) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s of %zu bytes at 0x%" PRIxPTR, write ? "write" : "read", n, a);
  return buf;
}

void map_shadow() {
  if (g_gshadow) return;
  const size_t bytes = (g_arena_hi - g_arena_lo) / 4 * sizeof(GlobalCell);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fatal("cannot reserve " + std::to_string(bytes >> 30) + " GiB of address space for the shadow of device memory (" +
          std::strerror(errno) + "); SIMT_CHECKS=0 runs without the checks");
  g_gshadow = static_cast<GlobalCell*>(p);
}

// The byte mask of [a, a + n) within the word at w.
uint32_t word_mask(uintptr_t w, uintptr_t a, size_t n) {
  const uintptr_t b0 = std::max(w, a), b1 = std::min(w + 4, a + n);
  return ((1u << (b1 - b0)) - 1) << (b0 - w);
}

// Each launch's queued node, by the launch's first epoch (its epochs run to the next launch's).
struct LaunchNode {
  NodeId node;
  const void* func;
};
std::map<uint32_t, LaunchNode> g_launch_nodes;

// The launch of an access by an earlier launch when that launch's node is not ordered before the
// running one (runtime_internal.h, ordered_before_running), else nullptr. Consecutive words were
// mostly touched by one launch: the answer for its range of epochs is kept for the running launch.
const LaunchNode* unordered_launch(const Access& old) {
  if (old.epoch == 0 || old.epoch >= g_launch_epoch) return nullptr;
  static uint32_t for_launch = 0, lo = 0, hi = 0;
  static const LaunchNode* answer = nullptr;
  if (for_launch != g_launch_epoch || old.epoch < lo || old.epoch >= hi) {
    auto it = g_launch_nodes.upper_bound(old.epoch);
    hi = it == g_launch_nodes.end() ? g_launch_epoch : it->first;
    if (it == g_launch_nodes.begin()) {
      lo = 0, answer = nullptr;
    } else {
      --it;
      lo = it->first;
      const LaunchNode& n = it->second;
      answer = ordered_before_running(n.node) ? nullptr : &n;
    }
    for_launch = g_launch_epoch;
  }
  return answer;
}

// An earlier access's launch named for a report: a kernel and the site, or a copy or memset.
std::string launch_name(const LaunchNode& launch, const Access& old) {
  if (!launch.func) return "an asynchronous copy or memset";
  return "kernel " + describe_code(launch.func) + "\n        at " + describe_code(old.pc);
}

// A node named for a report: its stream, and whether it belongs to a graph launch.
std::string node_name(const NodeId& n) {
  const std::string stream = n.stream == 1   ? "the legacy stream"
                             : n.stream == 2 ? "the per-thread stream"
                                             : "stream " + std::to_string(n.stream);
  return n.chain ? "a branch of a graph launch on " + stream : stream;
}

[[noreturn]] void report_across_streams(uintptr_t a, size_t n, bool write, const void* pc, const Access& old,
                                        bool old_write, const LaunchNode& launch) {
  const RunningNode now = running_node();
  report("data race on global memory between streams: " + where_global(a, n, write), now_access(0, pc),
         write ? "write" : "read", nullptr, nullptr,
         (std::string(old_write ? "earlier write" : "earlier read") + " by " + launch_name(launch, old) + "\n    on " +
          node_name(launch.node) + ", not ordered before this launch on " + node_name(now.id) +
          ": nothing makes one wait for the other (an event recorded after the first that the second's "
          "stream waits for, a synchronisation of the host between the two, the legacy stream's rules)\n")
             .c_str());
}

// A race between `old` and the running thread's access `now` to one word.
bool conflicts(const Access& old, const Access& now) {
  return old.epoch >= g_launch_epoch && old.tid != now.tid && (old.mask & now.mask & ~kGap) && !ordered(old);
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

}  // namespace

void global_launch_begin(const void* func) {
  const RunningNode r = running_node();
  g_launch_nodes[g_launch_epoch] = LaunchNode{r.id, func};
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
  map_shadow();
  if (g_overlapped && !g_waited[g_cur]) check_before_wait(a, n, write, pc);
  for (uintptr_t w = a & ~uintptr_t{3}; w < a + n; w += 4) {
    const uint32_t mask = word_mask(w, a, n);
    GlobalCell& c = g_gshadow[(w - g_arena_lo) / 4];
    if (const LaunchNode* o = unordered_launch(c.w)) report_across_streams(a, n, write, pc, c.w, true, *o);
    if (write)
      if (const LaunchNode* o = unordered_launch(c.r)) report_across_streams(a, n, write, pc, c.r, false, *o);
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

}  // namespace san

void san_all_launches_ordered() { san::g_launch_nodes.clear(); }

void san_copy(void* dst, const void* src, size_t n) {
  san_host_op({{src, n}}, {{dst, n}}, "an asynchronous copy or memset");
}

void san_host_op(std::initializer_list<SanRange> reads, std::initializer_list<SanRange> writes, const char* what) {
  using namespace san;
  if (!checks_on()) return;
  g_launch_epoch = ++g_epoch;  // the node's accesses are one launch's for the checks
  global_launch_begin(nullptr);
  map_shadow();
  const auto in_arena = [](uintptr_t a) { return a >= g_arena_lo && a < g_arena_hi; };
  const auto side = [&](SanRange r, bool write) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(r.p);
    const size_t n = r.n;
    if (!a || n == 0 || !in_arena(a)) return;
    for (uintptr_t w = a & ~uintptr_t{3}; w < a + n; w += 4) {
      GlobalCell& c = g_gshadow[(w - g_arena_lo) / 4];
      const LaunchNode* o = unordered_launch(c.w);
      const bool old_write = o != nullptr;
      if (!o && write) o = unordered_launch(c.r);
      if (o) {
        const RunningNode now = running_node();
        fatal("data race on global memory between streams: " + where_global(a, n, write) + " by " + what + " on " +
              node_name(now.id) + "\n    " + (old_write ? "earlier write" : "earlier read") + " by " +
              launch_name(*o, old_write ? c.w : c.r) + "\n    on " + node_name(o->node) +
              ", not ordered before this one: nothing makes one wait for the other (an event recorded after "
              "the first that the second's stream waits for, a synchronisation of the host between the two, "
              "the legacy stream's rules)");
      }
      Access now;
      now.epoch = g_epoch, now.mask = word_mask(w, a, n);
      (write ? c.w : c.r) = now;
    }
  };
  for (const SanRange& r : reads) side(r, false);
  for (const SanRange& r : writes) side(r, true);
}

void san_device_freed(uintptr_t lo, size_t n) {
  using namespace san;
  if (g_gshadow) madvise(&g_gshadow[(lo - g_arena_lo) / 4], n / 4 * sizeof(GlobalCell), MADV_DONTNEED);
}

}  // namespace simt::detail
