// The SIMT scheduler's thread-block clusters (scheduler.cpp runs the launch): the cluster barrier,
// whole or split into arrive and wait (the arrive only marks the thread, which runs on; the wait
// parks it like the whole barrier), its release, distributed shared memory, and each block's
// static __shared__ bytes while another block of its cluster runs.
#include <cstring>
#include <map>
#include <string>

#include "simt/sanitizer.h"
#include "simt/scheduler_state.h"

namespace simt::detail {

namespace {
// The running thread waits at the cluster barrier at file:line until release_cluster.
void park_at_cluster(Thread& t, const char* file, int line) {
  t.state = State::Cluster, t.file = file, t.line = line;
  ++g_cur->at_cluster;
  yield_to_scheduler();
}
}  // namespace

void cluster_sync(const char* file, int line) {
  san_leave();
  Thread& t = *g_cur->current;
  if (t.arrived)
    block_fatal(where(t) + " reached the cluster barrier at " + file + ":" + std::to_string(line) +
                    " between the arrive and the wait of a split one (it would arrive twice in one phase)",
                true);
  park_at_cluster(t, file, line);
}

void cluster_arrive(const char* file, int line) {
  san_leave();
  Thread& t = *g_cur->current;
  if (t.arrived)
    block_fatal(where(t) + " arrived at the cluster barrier at " + file + ":" + std::to_string(line) +
                    " twice without its wait between",
                true);
  t.arrived = true;
  san_enter(t.linear, true);
}

void cluster_wait(const char* file, int line) {
  san_leave();
  Thread& t = *g_cur->current;
  if (!t.arrived)
    block_fatal(
        where(t) + " waits at the cluster barrier at " + file + ":" + std::to_string(line) + " without having arrived",
        true);
  park_at_cluster(t, file, line);
}

unsigned cluster_size() { return g_launch ? g_launch->cluster : 1; }

void* map_shared_rank(const void* p, unsigned rank) {
  if (!g_launch || !g_cur || !g_cur->current) fatal("map_shared_rank outside a kernel");
  const std::string by = " (" + where(*g_cur->current) + ")";
  if (rank >= g_launch->cluster)
    fatal("map_shared_rank to rank " + std::to_string(rank) + " of a cluster of " + std::to_string(g_launch->cluster) +
          " blocks" + by);
  const unsigned char* base = g_cur->smem.data() + kSharedRedzone;
  const auto* a = static_cast<const unsigned char*>(p);
  if (g_launch->smem == 0 || a < base || a > base + g_launch->smem)  // one past the end: an end pointer
    fatal("map_shared_rank of an address outside this block's dynamic shared memory" + by +
          ": the emulator maps only the dynamic arena (static __shared__ variables are swapped between the "
          "phases of a cluster's blocks)");
  return g_blocks[rank].smem.data() + kSharedRedzone + (a - base);
}

namespace {
// A mailbox's bookkeeping (core/cluster_mailbox.cuh): the phases completed, and the current
// phase's bytes armed (by its block's thread 0, in mailbox_sent at `site`) and sent by the other
// blocks. Its waits are cluster waits, so at their release every byte of the phase has been sent
// and none of the next (the protocol: the next phase's bytes follow the receiver's wait): the
// release completes every armed phase.
struct MailboxState {
  size_t block = 0;
  unsigned completed = 0;
  bool armed = false;
  uint64_t expected = 0, received = 0;
  std::string site;
};
std::map<const void*, MailboxState> g_mailboxes;  // the running cluster's

MailboxState& mailbox_at(const void* box, const char* what) {
  const auto it = g_mailboxes.find(box);
  if (it == g_mailboxes.end())
    fatal(std::string(what) + " on a mailbox never initialised (mailbox_init) in this cluster (" +
          where(*g_cur->current) + ")");
  return it->second;
}

std::string mailbox_name(const MailboxState& m) {
  return "the mailbox of block " + std::to_string(m.block) + " of the cluster, phase " + std::to_string(m.completed) +
         (m.site.empty() ? std::string() : " (armed by " + m.site + ")");
}

// At a cluster barrier's release: each armed phase ends, with the bytes armed or not.
void complete_mailboxes() {
  for (auto& [box, m] : g_mailboxes) {
    if (!m.armed) continue;
    if (m.received != m.expected)
      fatal(mailbox_name(m) + ": " + std::to_string(m.expected) + " bytes armed, " + std::to_string(m.received) +
            " sent by the other blocks before the wait's release: on a GPU the wait would never end, or end early");
    ++m.completed, m.armed = false, m.expected = m.received = 0, m.site.clear();
  }
}
}  // namespace

void mailboxes_begin() { g_mailboxes.clear(); }

void mailboxes_end() {
  for (const auto& [box, m] : g_mailboxes)
    if (m.armed || m.received != 0)
      fatal(mailbox_name(m) + ": " + std::to_string(m.received) + " bytes sent" +
            (m.armed ? ", " + std::to_string(m.expected) + " armed," : std::string()) +
            " that no wait took before the cluster ended");
  g_mailboxes.clear();
}

void mailbox_init(const void* box) {
  if (!g_launch || !g_cur || !g_cur->current) fatal("mailbox_init outside a kernel");
  MailboxState m;
  m.block = size_t(g_cur - g_blocks.data());
  g_mailboxes[box] = m;
}

void mailbox_received(const void* box, size_t bytes) { mailbox_at(box, "mailbox_send").received += bytes; }

void mailbox_arrive(const void* box, uint32_t bytes) {
  Thread& t = *g_cur->current;
  if (t.linear != 0) return;
  MailboxState& m = mailbox_at(box, "mailbox_sent");
  if (m.armed) fatal("the mailbox of " + where(t) + " armed twice in one phase, the first by " + m.site);
  if (bytes >= (1u << 20))
    fatal("the mailbox of " + where(t) + " armed " + std::to_string(bytes) +
          " bytes in one phase: an mbarrier's transaction count holds less than 2^20");
  m.armed = true, m.expected = bytes, m.site = where(t);
}

void mailbox_wait(const void* box, unsigned parity, const char* file, int line) {
  cluster_wait(file, line);
  const MailboxState& m = mailbox_at(box, "mailbox_wait");
  if (m.completed % 2 == parity % 2)
    fatal(where(*g_cur->current) + " waits at " + file + ":" + std::to_string(line) + " for a phase of parity " +
          std::to_string(parity % 2) + " of its mailbox, " + std::to_string(m.completed) +
          " phases completed: that phase was never armed, or the parity is wrong");
}

bool cluster_block_exited(size_t rank) { return rank < g_blocks.size() && g_blocks[rank].live == 0; }

// The static __shared__ variables are globals of the executable: a block of a cluster keeps its
// own bytes of them while it is switched out.
void save_statics(Block& B) {
  B.statics.clear();
  for (const SharedRange& r : static_shared_ranges())
    B.statics.insert(B.statics.end(), reinterpret_cast<unsigned char*>(r.lo), reinterpret_cast<unsigned char*>(r.hi));
}
void restore_statics(const Block& B) {
  size_t at = 0;
  for (const SharedRange& r : static_shared_ranges()) {
    std::memcpy(reinterpret_cast<void*>(r.lo), B.statics.data() + at, r.hi - r.lo);
    at += r.hi - r.lo;
  }
}

// Every live thread of the cluster waits at the cluster barrier (as on sm_90, exited threads
// are not waited for): all at one place, then all run on.
void release_cluster() {
  const Thread* site = nullptr;
  for (Block& B : g_blocks) {
    g_cur = &B;
    for (const Thread& t : B.threads) {
      if (t.state != State::Cluster) continue;
      if (!site)
        site = &t;
      else if (t.line != site->line || std::strcmp(t.file, site->file) != 0)
        block_fatal("the cluster barrier reached from different places in one cluster: " + where(t) + " at " + t.file +
                        ":" + std::to_string(t.line) + ", " + where(*site) + " at " + site->file + ":" +
                        std::to_string(site->line),
                    false);
    }
  }
  for (Block& B : g_blocks) {
    for (Thread& t : B.threads) {
      if (t.state == State::Cluster) t.state = State::Ready, t.pass(t.file, t.line);
      t.arrived = false;
    }
    B.at_cluster = 0;
  }
  complete_mailboxes();
  san_cluster_released();
}

}  // namespace simt::detail
