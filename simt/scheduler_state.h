// The scheduler's state (simt/scheduler.cpp: blocks, threads, barriers, warp collectives, the
// launch; simt/scheduler_cluster.cpp: thread-block clusters and their barriers). Internal to
// simt/.
#pragma once
#include <boost/context/fiber.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "simt/runtime_internal.h"

namespace simt::detail {

enum class State { Ready, Barrier, Warp, Cluster, Done };

struct Coords {
  uint3 thread;
  uint3 block;
  dim3 block_dim;
  dim3 grid_dim;
};

struct Thread {
  Coords coords{};
  unsigned linear = 0, lane = 0, warp = 0;
  State state = State::Ready;
  bool arrived = false;  // passed a cluster barrier's arrive, not yet its wait
  const char* file = "";
  int line = 0;
  // How often it passed each barrier site (the first kSites distinct file:line).
  static constexpr int kSites = 8;
  struct Site {
    const char* file;
    int line;
    unsigned passed;
  } sites[kSites];
  int nsites = 0;
  unsigned passed_at(const char* f, int l) const {
    for (int i = 0; i < nsites; ++i)
      if (sites[i].line == l && std::strcmp(sites[i].file, f) == 0) return sites[i].passed;
    return 0;
  }
  void pass(const char* f, int l) {
    for (int i = 0; i < nsites; ++i)
      if (sites[i].line == l && std::strcmp(sites[i].file, f) == 0) {
        ++sites[i].passed;
        return;
      }
    if (nsites < kSites) sites[nsites++] = Site{f, l, 1};
  }
  WarpOp op = WarpOp::Sync;  // pending collective
  unsigned mask = 0;
  uint64_t value = 0, result = 0;
  int arg = 0, width = 32;
  boost::context::fiber fiber;  // the thread, while it is suspended
  boost::context::fiber sched;  // the scheduler, while the thread runs
};

// A block: its threads, shared arena, and barrier bookkeeping.
struct Block {
  std::vector<Thread> threads;
  std::vector<unsigned char> smem;     // the dynamic arena, with kSharedRedzone bytes either side
  std::vector<unsigned char> statics;  // its static __shared__ bytes while another block runs
  unsigned live = 0, at_barrier = 0, at_cluster = 0;
  Thread* current = nullptr;
};

extern const KernelLaunch* g_launch;
extern std::vector<Block> g_blocks;  // the blocks of the cluster being run (one without clusters)
extern Block* g_cur;                 // the block being run

std::string where(const Thread& t);  // "block (x,y,z) thread (x,y,z) [warp w lane l]"
// Aborts with `what` and the positions of the running block's threads (all live ones, or those
// waiting at a __syncthreads).
[[noreturn]] void block_fatal(const std::string& what, bool list_all);
void yield_to_scheduler();  // suspends the running thread until the scheduler resumes it

// Clusters (scheduler_cluster.cpp).
void save_statics(Block& B);  // the block's static __shared__ bytes, while another block runs
void restore_statics(const Block& B);
void release_cluster();  // every live thread of the cluster waits at the cluster barrier: release it
// The mailboxes of the cluster about to run are none yet; at its end, none may hold bytes no
// wait took (core/cluster_mailbox.cuh).
void mailboxes_begin();
void mailboxes_end();

}  // namespace simt::detail
