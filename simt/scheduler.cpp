// The SIMT scheduler: runs one kernel launch on the calling OS thread. Blocks run one after
// another in a seeded shuffled order; the threads of a block are Boost.Context fibers, resumed
// in a freshly shuffled order every round. A thread runs until it blocks (barrier, warp
// collective) or exits, so a kernel without barriers or warp ops switches only at start and end.
// A cluster launch (launch_cluster) runs the blocks of one cluster together, phase by phase: in
// a shuffled order each block runs until all its live threads wait at the cluster barrier, then
// the barrier releases them all (scheduler_cluster.cpp). Blocks of a cluster never interleave
// within a phase, so each keeps its own copy of the static __shared__ variables, swapped in when
// it runs.
#include <boost/context/fiber.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "simt/asan_fibers.h"
#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"
#include "simt/scheduler_state.h"

namespace ctx = boost::context;

namespace simt {
namespace detail {

namespace {

// ---- schedule randomness: splitmix64, restarted by set_seed ----
uint64_t g_seed = 0;
bool g_seed_set = false;
uint64_t g_rng = 0;

uint64_t next_random() {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
template <class T>
void shuffle(std::vector<T>& v) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next_random() % i]);
}

// ---- fiber stacks: fixed size, pooled across blocks and launches ----
constexpr size_t kStackBytes = 128 << 10;

struct StackPool {
  std::vector<void*> free;
  ~StackPool() {
    for (void* p : free) std::free(p);
  }
};
StackPool g_stacks;

struct PooledStack {
  ctx::stack_context allocate() {
    void* base;
    if (g_stacks.free.empty()) {
      base = std::malloc(kStackBytes);
      if (!base) fatal("out of memory for fiber stacks");
    } else {
      base = g_stacks.free.back();
      g_stacks.free.pop_back();
    }
    asan_stack_allocated(base, kStackBytes);
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char*>(base) + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) { g_stacks.free.push_back(static_cast<char*>(sc.sp) - sc.size); }
};

const char* op_name(WarpOp op) {
  static const char* names[] = {"__syncwarp",    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                "__ballot_sync", "__any_sync",  "__all_sync",     "mma.sync"};
  return names[static_cast<int>(op)];
}

std::string state_of(const Thread& t) {
  char buf[64];
  switch (t.state) {
    case State::Ready:
      return "runnable";
    case State::Done:
      return "exited";
    case State::Barrier:
      return std::string("at __syncthreads() ") + t.file + ":" + std::to_string(t.line);
    case State::Cluster:
      return std::string("at the cluster barrier ") + t.file + ":" + std::to_string(t.line);
    case State::Warp:
      std::snprintf(buf, sizeof buf, " mask 0x%08x ", t.mask);
      return std::string("at ") + op_name(t.op) + buf + t.file + ":" + std::to_string(t.line);
  }
  return "?";
}
// Every thread of a block must pass the same sequence of barriers: all waiters at one place,
// and no thread that exited after passing this barrier site fewer times than the others now do
// (a loop around the barrier whose trip count depends on the thread). A thread that exits
// before it ever reaches the site is not waited for (sm_70+: a barrier waits for the threads that
// have not exited), so the early-exit idiom `if (i >= n) return;` ahead of a barrier is accepted.
void release_barrier() {
  const Thread* first = nullptr;
  for (const Thread& t : g_cur->threads) {
    if (t.state != State::Barrier) continue;
    if (!first)
      first = &t;
    else if (t.line != first->line || std::strcmp(t.file, first->file) != 0)
      block_fatal("__syncthreads() reached from different places in one block", false);
  }
  const unsigned n = first->passed_at(first->file, first->line) + 1;
  for (const Thread& t : g_cur->threads) {
    const unsigned c = t.state == State::Done ? t.passed_at(first->file, first->line) : 0;
    if (c > 0 && c < n)
      block_fatal("barrier divergence: " + where(t) + " passed the __syncthreads() at " + first->file + ":" +
                      std::to_string(first->line) + " " + std::to_string(c) +
                      " times and exited, while the other threads of its block reach it a time #" + std::to_string(n) +
                      " (a barrier inside a loop whose trip count depends on the thread is undefined)",
                  false);
  }
  for (Thread& t : g_cur->threads)
    if (t.state == State::Barrier) t.state = State::Ready, t.pass(t.file, t.line);
  g_cur->at_barrier = 0;
  san_barrier_released();
}

// A lane exited: any lane still waiting for it in a collective can never be released.
void check_exit(const Thread& gone) {
  const unsigned base = gone.warp * 32;
  for (unsigned j = base; j < std::min<size_t>(base + 32, g_cur->threads.size()); ++j) {
    const Thread& u = g_cur->threads[j];
    if (u.state == State::Warp && ((u.mask >> gone.lane) & 1u))
      block_fatal(where(gone) + " exited while " + where(u) + " waits for it " + state_of(u), true);
  }
}

void complete_collective(Thread& t) {
  Thread* lanes = &g_cur->threads[t.warp * 32];
  const unsigned mask = t.mask;
  const int w = t.width;
  if (t.op == WarpOp::Mma) {  // warp_collective checked that the mask is the whole warp
    MmaLane* operands[32];
    for (unsigned j = 0; j < 32; ++j) operands[j] = reinterpret_cast<MmaLane*>(lanes[j].value);
    mma_m16n8k16_bf16_warp(operands);
    // No san_collective: mma.sync orders no memory accesses between the lanes.
    for (unsigned j = 0; j < 32; ++j) lanes[j].state = State::Ready;
    return;
  }
  uint64_t ballot = 0;
  for (unsigned j = 0; j < 32; ++j)
    if (((mask >> j) & 1u) && lanes[j].value) ballot |= 1ull << j;
  for (unsigned j = 0; j < 32; ++j) {
    if (!((mask >> j) & 1u)) continue;
    Thread& u = lanes[j];
    const int lane = static_cast<int>(j), seg = lane & ~(w - 1), in_seg = lane & (w - 1);
    int src = lane;
    switch (t.op) {
      case WarpOp::Shfl:
        src = seg + (u.arg & (w - 1));
        break;
      case WarpOp::ShflUp:
        src = in_seg >= u.arg ? lane - u.arg : lane;
        break;
      case WarpOp::ShflDown:
        src = in_seg + u.arg < w ? lane + u.arg : lane;
        break;
      case WarpOp::ShflXor:
        src = (lane ^ u.arg) > (lane | (w - 1)) ? lane : (lane ^ u.arg);
        break;
      default:
        break;
    }
    if (t.op == WarpOp::Ballot)
      u.result = ballot;
    else if (t.op == WarpOp::Any)
      u.result = ballot != 0;
    else if (t.op == WarpOp::All)
      u.result = ballot == mask;
    // Reading a lane outside the mask is undefined on the GPU: hand back all-ones (a NaN).
    else
      u.result = (mask >> src) & 1u ? lanes[src].value : ~0ull;
    u.state = State::Ready;
  }
  san_collective(t.warp, mask);
}

uint64_t g_launches = 0;

}  // namespace

const KernelLaunch* g_launch = nullptr;
std::vector<Block> g_blocks;
Block* g_cur = nullptr;

std::string where(const Thread& t) {
  const uint3& b = t.coords.block;
  char buf[160];
  std::snprintf(buf, sizeof buf, "block (%u,%u,%u) thread (%u,%u,%u) [warp %u lane %u]", b.x, b.y, b.z,
                t.coords.thread.x, t.coords.thread.y, t.coords.thread.z, t.warp, t.lane);
  return buf;
}

[[noreturn]] void block_fatal(const std::string& what, bool list_all) {
  san_leave();
  std::string r = what + "\n";
  size_t listed = 0, more = 0;
  for (const Thread& t : g_cur->threads)
    if (list_all ? t.state != State::Done : (t.state == State::Barrier)) {
      if (listed++ < 16)
        r += "    " + where(t) + ": " + state_of(t) + "\n";
      else
        ++more;
    }
  if (more) r += "    ... and " + std::to_string(more) + " more threads\n";
  fatal(r);
}

// Suspends the running thread until the scheduler resumes it.
void yield_to_scheduler() {
  Thread* t = g_cur->current;
  asan_to_scheduler(t->linear, false);
  t->sched = std::move(t->sched).resume();
  asan_back_in_thread(t->linear);
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width, const char* file, int line) {
  san_leave();
  Thread& t = *g_cur->current;
  t.op = op, t.mask = mask, t.value = value, t.arg = arg, t.width = width, t.file = file, t.line = line;
  t.state = State::Warp;
  if (!((mask >> t.lane) & 1u))
    block_fatal(where(t) + " called " + state_of(t) + " with a mask that does not include its own lane", true);
  if (op == WarpOp::Mma && mask != 0xffffffffu)
    block_fatal(where(t) + " " + state_of(t) + ": an .aligned mma needs every lane of the warp", true);
  if (width < 1 || width > 32 || (width & (width - 1)))
    block_fatal(where(t) + ": width " + std::to_string(width) + " is not a power of two <= 32 " + state_of(t), true);
  bool complete = true;
  for (unsigned j = 0; j < 32; ++j) {
    if (!((mask >> j) & 1u)) continue;
    const size_t idx = t.warp * 32 + j;
    if (idx >= g_cur->threads.size())
      block_fatal(where(t) + " " + state_of(t) + ": lane " + std::to_string(j) +
                      " is named in the mask but does not exist (block of " + std::to_string(g_cur->threads.size()) +
                      " threads)",
                  true);
    const Thread& u = g_cur->threads[idx];
    if (u.state == State::Done)
      block_fatal(where(t) + " " + state_of(t) + ": lane " + std::to_string(j) + " of the mask has exited", true);
    // An mma from another call site is another instruction (.aligned: all lanes run the same one).
    const bool other_site = op == WarpOp::Mma && (u.line != line || std::strcmp(u.file, file) != 0);
    if (u.state == State::Warp && (u.op != op || u.mask != mask || u.width != width || other_site))
      block_fatal("warp collective mismatch: " + where(t) + " " + state_of(t) + " but " + where(u) + " " + state_of(u),
                  true);
    if (u.state != State::Warp) complete = false;
  }
  if (complete) complete_collective(t);
  yield_to_scheduler();
  return t.result;
}

void syncthreads(const char* file, int line) {
  san_leave();
  Thread& t = *g_cur->current;
  t.state = State::Barrier, t.file = file, t.line = line;
  ++g_cur->at_barrier;
  yield_to_scheduler();
}

namespace {

void start_block(const KernelLaunch& k, Block& B, size_t b) {
  const size_t nthreads = B.threads.size();
  const uint3 bidx{unsigned(b % k.grid.x), unsigned(b / k.grid.x % k.grid.y),
                   unsigned(b / (size_t(k.grid.x) * k.grid.y))};
  B.smem.assign(k.smem + 2 * kSharedRedzone, 0xFF);
  poison_static_shared();
  san_block_begin(b, B.smem.data() + kSharedRedzone, k.smem);
  for (unsigned i = 0; i < nthreads; ++i) {
    Thread& t = B.threads[i];
    t.coords =
        Coords{uint3{i % k.block.x, i / k.block.x % k.block.y, i / (k.block.x * k.block.y)}, bidx, k.block, k.grid};
    t.linear = i, t.lane = i % 32, t.warp = i / 32, t.state = State::Ready, t.arrived = false, t.nsites = 0;
    t.fiber = ctx::fiber(std::allocator_arg, PooledStack{}, [&t, &k, &B](ctx::fiber&& sched) {
      asan_thread_started();
      t.sched = std::move(sched);
      k.body();
      san_leave();
      t.state = State::Done;
      --B.live;
      if (B.live == 0 && k.cluster > 1) san_block_exited(size_t(&B - g_blocks.data()));
      check_exit(t);
      asan_to_scheduler(t.linear, true);
      return std::move(t.sched);
    });
    asan_fiber_created(i);
  }
  B.live = unsigned(nthreads), B.at_barrier = 0, B.at_cluster = 0;
}

// Runs the threads of g_block until none can run: all exited or waiting at the cluster barrier.
void run_until_parked(std::vector<unsigned>& runnable) {
  Block& B = *g_cur;
  const size_t nthreads = B.threads.size();
  while (B.live > B.at_cluster) {
    runnable.clear();
    for (unsigned i = 0; i < nthreads; ++i)
      if (B.threads[i].state == State::Ready) runnable.push_back(i);
    if (runnable.empty()) {
      if (B.at_cluster > 0)
        block_fatal("deadlock: threads of a block wait at the cluster barrier while others wait elsewhere", true);
      block_fatal("deadlock: no thread of the block can run", true);
    }
    shuffle(runnable);
    for (unsigned i : runnable) {
      Thread& t = B.threads[i];
      B.current = &t;
      set_coords(t.coords.thread, t.coords.block, t.coords.block_dim, t.coords.grid_dim);
      san_enter(i, t.arrived);
      asan_to_thread(i, kStackBytes);
      t.fiber = std::move(t.fiber).resume();
      asan_back_in_scheduler();
      san_leave();
      if (B.at_barrier > 0 && B.at_barrier == B.live) release_barrier();
    }
  }
}

}  // namespace

void run_kernel(const KernelLaunch& k) {
  if (!g_seed_set) {
    set_seed(seed());
    // Once per process: ctest shows it with the output of a failing test.
    std::fprintf(stderr, "simt: schedule seed SIMT_SEED=%llu\n", static_cast<unsigned long long>(g_seed));
  }
  const size_t nthreads = size_t(k.block.x) * k.block.y * k.block.z;
  const size_t nblocks = size_t(k.grid.x) * k.grid.y * k.grid.z;
  const size_t C = k.cluster;  // consecutive linear block indices: the cluster runs along x
  ++g_launches;
  std::vector<size_t> order(nblocks / C);
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  shuffle(order);
  g_launch = &k;
  g_blocks.resize(C);
  for (Block& B : g_blocks) B.threads.clear(), B.threads.resize(nthreads);
  san_launch_begin(k);
  std::vector<unsigned> runnable;
  runnable.reserve(nthreads);
  std::vector<size_t> phase(C);
  for (size_t i = 0; i < C; ++i) phase[i] = i;
  for (size_t c : order) {
    mailboxes_begin();
    for (size_t i = 0; i < C; ++i) {
      g_cur = &g_blocks[i];
      start_block(k, g_blocks[i], c * C + i);
      if (C > 1) save_statics(g_blocks[i]), san_block_park(i);
    }
    for (;;) {
      shuffle(phase);
      for (size_t i : phase) {
        g_cur = &g_blocks[i];
        if (g_cur->live == 0) continue;
        if (C > 1) restore_statics(*g_cur), san_block_resume(i);
        run_until_parked(runnable);
        if (C > 1) save_statics(*g_cur), san_block_park(i);
      }
      bool waiting = false;
      for (const Block& B : g_blocks) waiting |= B.live > 0;
      if (!waiting) break;
      release_cluster();
    }
    mailboxes_end();
  }
  for (Block& B : g_blocks) B.current = nullptr;
  g_cur = &g_blocks[0];
  san_launch_end();
}

uint64_t schedule_random() { return next_random(); }
void yield_mid_way() { yield_to_scheduler(); }

std::string thread_name(size_t block_linear, unsigned linear) {
  const KernelLaunch& k = *g_launch;
  Thread t;
  t.coords.block = uint3{unsigned(block_linear % k.grid.x), unsigned(block_linear / k.grid.x % k.grid.y),
                         unsigned(block_linear / (size_t(k.grid.x) * k.grid.y))};
  t.coords.thread = uint3{linear % k.block.x, linear / k.block.x % k.block.y, linear / (k.block.x * k.block.y)};
  t.lane = linear % 32, t.warp = linear / 32;
  return where(t);
}

}  // namespace detail

uint64_t seed() {
  using namespace detail;
  if (!g_seed_set) {
    const char* env = std::getenv("SIMT_SEED");
    g_seed = env && *env ? std::strtoull(env, nullptr, 10) : 1;
  }
  return g_seed;
}

void set_seed(uint64_t s) {
  using namespace detail;
  g_seed = s;
  g_seed_set = true;
  g_rng = s * 0xD1B54A32D192ED03ull;
  restart_stream_order();
}

void* dynamic_shared() {
  using detail::g_cur;
  using detail::kSharedRedzone;
  return !g_cur || g_cur->smem.size() <= 2 * kSharedRedzone ? nullptr : g_cur->smem.data() + kSharedRedzone;
}

}  // namespace simt
