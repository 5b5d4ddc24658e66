// The emulator's checks on shared memory (sanitizer.cpp has the rules they share): one flat
// shadow, a cell a byte, for the static __shared__ variables and the running block's dynamic
// arena; in a cluster launch each block's shadow is parked while another block runs, and an
// access through distributed shared memory is checked against the owner's.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "simt/sanitizer_state.h"

namespace simt::detail {
namespace san {

uintptr_t g_static_lo = 0, g_static_hi = 0, g_dyn_lo = 0, g_dyn_hi = 0;

namespace {

struct SharedCell {  // one byte of shared memory
  // The last read, and the last one before it by another warp: a later write by any thread
  // then conflicts with at least one of them if reads came from two warps.
  Access w, r, r_other;
  uint32_t written = 0;  // block epoch of the first write in the running block
};
// ---- shared memory: static ranges then the dynamic arena, one flat shadow ----
struct Span {
  uintptr_t lo, hi;
  size_t shadow;  // index of lo's cell
  const char* what;
};
std::vector<Span> g_static_spans, g_spans;  // g_spans: the static ones plus this block's dynamic arena
bool g_static_found = false;
size_t g_static_cells = 0;
std::vector<SharedCell> g_sshadow;

// ---- the other blocks of a running cluster, parked (slot = rank) while one block runs ----
struct ParkedBlock {  // what san_block_begin set up for one block of a cluster
  size_t block = 0;
  uint32_t block_epoch = 0, sync_epoch = 0;
  std::vector<std::array<uint32_t, 32>> vc;
  std::vector<Span> spans;
  uintptr_t dyn_lo = 0, dyn_hi = 0;
  std::vector<SharedCell> sshadow;
};
std::vector<ParkedBlock> g_parked;
// Per slot: the last access another block made to its arena in the running cluster (epoch 0:
// none), for the report when the slot's block exits before a cluster barrier orders it.
std::vector<Access> g_remote_touch;

// Shared memory belongs to the block: only this block's current interval can conflict, and
// (distributed shared memory) another block of its cluster since the last cluster barrier. A
// record of a block of another cluster is an earlier cluster's, which ran in this slot before.
bool conflicts_shared(const Access& old, const Access& now) {
  const size_t other_block = old.tid / g_nthreads;
  if (other_block != g_block)
    return old.epoch >= g_launch_epoch && other_block / g_cluster == g_block / g_cluster && !ordered(old);
  // An access between its thread's arrive and wait at a split cluster barrier stays unordered
  // past the barrier's release (ordered decides).
  return (old.epoch == g_epoch || (in_gap(old) && old.epoch >= g_block_epoch)) && old.tid != now.tid && !ordered(old);
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
    const bool open = c.r.epoch == g_epoch || (in_gap(c.r) && !ordered(c.r));  // this block's, not yet ordered
    if ((other_block && c.r.epoch >= (in_gap(c.r) ? g_cluster_epoch_prev : g_cluster_epoch)) ||
        (!other_block && open && (c.r.tid % g_nthreads) / 32 != g_cur / 32))
      c.r_other = c.r;
    c.r = now;
  }
}

}  // namespace

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

void shared_launch_begin() {
  if (g_static_found) return;
  g_static_found = true;
  g_static_lo = ~uintptr_t{0};
  for (const SharedRange& r : static_shared_ranges()) {
    g_static_spans.push_back(Span{r.lo, r.hi, g_static_cells, r.name.c_str()});
    g_static_cells += r.hi - r.lo;
    g_static_lo = std::min(g_static_lo, r.lo), g_static_hi = std::max(g_static_hi, r.hi);
  }
}

void shared_block_begin(size_t block_linear, unsigned char* dyn, size_t dyn_bytes) {
  if (block_linear % g_cluster == 0) g_remote_touch.assign(g_cluster, Access{});  // a new cluster's first block
  g_spans = g_static_spans;
  g_dyn_lo = g_dyn_hi = 0;
  if (dyn_bytes > 0) {
    g_dyn_lo = reinterpret_cast<uintptr_t>(dyn), g_dyn_hi = g_dyn_lo + dyn_bytes;
    g_spans.push_back(Span{g_dyn_lo, g_dyn_hi, g_static_cells, "dynamic shared memory"});
  }
  if (g_sshadow.size() < g_static_cells + dyn_bytes) g_sshadow.resize(g_static_cells + dyn_bytes);
}

}  // namespace san

using namespace san;

void san_block_park(size_t slot) {
  if (g_parked.size() <= slot) g_parked.resize(slot + 1);
  ParkedBlock& p = g_parked[slot];
  p.block = g_block, p.block_epoch = g_block_epoch, p.sync_epoch = g_sync_epoch, p.dyn_lo = g_dyn_lo,
  p.dyn_hi = g_dyn_hi;
  std::swap(p.vc, g_vc);
  std::swap(p.spans, g_spans);
  std::swap(p.sshadow, g_sshadow);
}

void san_block_resume(size_t slot) {
  ParkedBlock& p = g_parked[slot];
  g_block = p.block, g_block_epoch = p.block_epoch, g_sync_epoch = p.sync_epoch, g_dyn_lo = p.dyn_lo,
  g_dyn_hi = p.dyn_hi;
  std::swap(p.vc, g_vc);
  std::swap(p.spans, g_spans);
  std::swap(p.sshadow, g_sshadow);
}

void san_block_exited(size_t slot) {
  if (!checks_on() || slot >= g_remote_touch.size()) return;
  const Access& touch = g_remote_touch[slot];
  if (touch.epoch >= g_launch_epoch && touch.epoch >= (in_gap(touch) ? g_cluster_epoch_prev : g_cluster_epoch)) {
    const Access now = now_access(1, g_k->func);  // the exiting thread; no code address of its own
    report(
        "a block exited while another block of its cluster accessed its shared memory with no cluster barrier "
        "between",
        now, "exit", &touch, "access (distributed shared memory)",
        "a block's shared memory ends with it: a cluster barrier before it exits keeps it for the others\n");
  }
}

}  // namespace simt::detail
