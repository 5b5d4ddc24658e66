// The emulator's deferred work (runtime_internal.h): a queue per stream, run at synchronisation
// points in an order drawn from the schedule seed, and each queued node's vector clock for the
// memory checks' races between streams (sanitizer_global.cpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"

namespace simt::detail {
namespace {

// Eager work waits in one queue per stream and runs only at synchronisation points, one node at
// a time, each the head of some stream's queue whose cross-stream dependencies have run: which
// stream's head goes next is drawn from the schedule seed. So work ordered only by the order it
// was submitted in, on two streams, runs in either order under some seed, as on a GPU.
struct Queued {
  Node node;
  uint64_t seq = 0;             // submission number, from 1
  uint64_t prev = 0;            // the node submitted before it on its stream (0: none)
  std::vector<uint64_t> after;  // other streams' nodes it waits for (events, the legacy stream)
  Clock clock;                  // the nodes ordered before it (runtime_internal.h)
  // A graph launch's node: its chain and place in it (submit_graph), else 0.
  unsigned long long chain = 0;
  uint64_t place = 0;
};
struct Queue {
  std::deque<Queued> nodes;
  bool blocking = false;  // a stream that syncs with the legacy one (known after it is destroyed)
};
std::map<unsigned long long, Queue> g_queues;  // by stream id; a queue that empties is erased
std::set<uint64_t> g_pending;                  // the seqs queued and not yet run
uint64_t g_next_seq = 0, g_last_run = 0;
unsigned long long g_last_queue = 0;  // the stream of the node that ran last (0: none yet)
Clock g_host_clock;                   // the nodes the host has synchronised with
Clock g_all_clock;                    // each stream's last node run: what a device-wide sync tells the host
RunningNode g_running;

// Legacy-stream work the host has already returned from but nothing has ordered yet: the tail
// of a synchronous cudaMemcpy from pageable memory (the DMA from the staging buffer) and a
// synchronous cudaMemset. Non-blocking streams never wait for it; it joins the legacy stream's
// queue (as late as CUDA allows) when work goes to the legacy stream or a blocking stream, or
// the legacy stream or the device is synchronised.
// Each with what the host had synchronised with when it returned (the work's clock starts there).
std::vector<std::pair<Node, Clock>> g_legacy_pending;

bool pending(uint64_t seq) { return g_pending.count(seq) != 0; }

void join(Clock& into, const Clock& c) {
  for (const auto& [stream, seq] : c) {
    uint64_t& mine = into[stream];
    mine = std::max(mine, seq);
  }
}

CUstream_st& legacy_stream() { return *resolve(cudaStreamLegacy); }

std::mt19937_64 g_order_rng;
bool g_order_seeded = false;
std::mt19937_64& order_rng() {
  if (!g_order_seeded) restart_stream_order();
  return g_order_rng;
}

}  // namespace

void enqueue(Node&& n, CUstream_st* st, const CUevent_st* waits_for, const Clock* host) {
  const bool legacy = st == &legacy_stream(), blocking = !legacy && !(st->flags & cudaStreamNonBlocking);
  Queued q{std::move(n), ++g_next_seq, st->last_seq, {}, host ? *host : g_host_clock};
  join(q.clock, st->last_clock);
  if (waits_for) {
    if (pending(waits_for->record_seq)) q.after.push_back(waits_for->record_seq);
    join(q.clock, waits_for->record_clock);
  }
  // The legacy stream waits for every blocking stream's earlier work, and they for its.
  for (const auto& [other_id, other] : g_queues)
    if (legacy ? other.blocking : blocking && other_id == legacy_stream().id) q.after.push_back(other.nodes.back().seq);
  if (legacy)
    for (const CUstream_st* b : blocking_streams()) join(q.clock, b->last_clock);
  if (blocking) join(q.clock, legacy_stream().last_clock);
  const unsigned long long id = st->id;
  q.clock[id] = q.seq;
  // An overlapped launch that also waits for another stream is an ordinary one: it overlaps
  // only the kernel before it on its own stream (the rule run_until keeps by running it next).
  if (q.node.kind == NodeKind::Kernel && !q.after.empty()) q.node.kernel.overlapped = false;
  st->last_seq = q.seq;
  st->last_clock = q.clock;
  g_pending.insert(q.seq);
  Queue& queue = g_queues[id];
  queue.blocking = blocking;
  queue.nodes.push_back(std::move(q));
}

void defer_on_legacy(Node&& n) { g_legacy_pending.emplace_back(std::move(n), g_host_clock); }

void settle_legacy() {
  auto nodes = std::move(g_legacy_pending);
  g_legacy_pending.clear();
  for (auto& [n, host] : nodes) enqueue(std::move(n), &legacy_stream(), nullptr, &host);
}

void run_until(const std::function<bool()>& done) {
  std::vector<unsigned long long> ready;
  while (!g_queues.empty() && !done()) {
    unsigned long long pick = 0;
    // A kernel launched overlapped runs right after the kernel before it on its stream, as the
    // sanitizer pairs it with the node run just before it.
    if (auto it = g_queues.find(g_last_queue); it != g_queues.end()) {
      const Queued& head = it->second.nodes.front();
      if (head.node.kind == NodeKind::Kernel && head.node.kernel.overlapped && head.prev == g_last_run)
        pick = g_last_queue;
    }
    if (!pick) {
      ready.clear();
      for (const auto& [id, q] : g_queues) {
        const auto& after = q.nodes.front().after;
        if (std::none_of(after.begin(), after.end(), pending)) ready.push_back(id);
      }
      // The oldest queued node waits for nothing queued, so some head is always ready.
      if (ready.empty()) fatal("internal: no stream's queued work is ready to run");
      pick = ready.size() == 1 ? ready[0] : ready[order_rng()() % ready.size()];
    }
    auto it = g_queues.find(pick);
    Queued q = std::move(it->second.nodes.front());
    it->second.nodes.pop_front();
    if (it->second.nodes.empty()) g_queues.erase(it);
    g_pending.erase(q.seq);
    // A record the event has been recorded again since says nothing about the event.
    if (q.node.kind == NodeKind::EventRecord && q.seq != q.node.event->record_seq) continue;
    // Its predecessor ran earlier, with other work after it: nothing left to overlap.
    if (q.node.kind == NodeKind::Kernel && q.prev != g_last_run) q.node.kernel.overlapped = false;
    g_last_run = q.seq;
    g_last_queue = pick;
    uint64_t& ran = g_all_clock[pick];
    ran = std::max(ran, q.seq);
    g_running = RunningNode{NodeId{pick, q.seq, q.chain, q.place}, &q.clock};
    run_node(q.node);
    g_running = RunningNode{};
  }
}

RunningNode running_node() { return g_running; }

void restart_stream_order() {
  g_order_rng.seed(seed() * 0x9E3779B97F4A7C15ull + 7);
  g_order_seeded = true;
}

bool ordered_before_running(const NodeId& n) {
  if (!g_running.clock || !n.stream) return true;
  const auto reaches = [](unsigned long long entry, uint64_t seq) {
    const auto it = g_running.clock->find(entry);
    return it != g_running.clock->end() && it->second >= seq;
  };
  return reaches(n.stream, n.seq) || (n.chain && reaches(n.chain, n.place));
}

cudaError_t submit_and_wait(Node&& n, cudaStream_t s) {
  if (cudaError_t e = submit(std::move(n), s)) return e;
  const CUstream_st* st = resolve(s);
  const uint64_t seq = st->last_seq;
  run_until([seq] { return !pending(seq); });
  join(g_host_clock, st->last_clock);
  return cudaSuccess;
}

cudaError_t submit_graph(const std::vector<Node>& nodes, const std::vector<size_t>& order, cudaStream_t s) {
  for (size_t i : order) {
    Node copy = nodes[i];
    if (cudaError_t e = submit(std::move(copy), s)) return e;
  }
  if (order.empty()) return cudaSuccess;
  // The nodes are queued one after the other, in the drawn order; for the race checks each is
  // ordered after its dependencies only. The graph splits into chains (a node continues the chain
  // its first dependency ends, else starts one), each a clock entry of its own for this launch.
  // The work after the launch is ordered after all of it by the stream's entry, as before.
  CUstream_st* st = resolve(s);
  const unsigned long long id = st->id;
  Queue& queue = g_queues.at(id);
  std::vector<Queued*> queued(nodes.size());
  for (size_t k = 0; k < order.size(); ++k) queued[order[k]] = &queue.nodes[queue.nodes.size() - order.size() + k];
  const uint64_t first = queued[order[0]]->seq;
  if (queued[order.back()]->seq != first + order.size() - 1)
    fatal("internal: a graph's nodes were not queued together");
  Clock base = queued[order[0]]->clock;  // what the stream had ordered before the launch
  base[id] = first - 1;                  // its nodes before the launch
  static unsigned long long chains = kGraphChains;
  std::vector<unsigned long long> chain(nodes.size());
  std::vector<uint64_t> place(nodes.size());
  std::map<unsigned long long, size_t> chain_end;  // chain -> its last node so far
  for (size_t i : order) {
    Queued& q = *queued[i];
    q.clock = base;
    for (size_t d : nodes[i].deps) {
      join(q.clock, queued[d]->clock);
      if (!chain[i] && chain_end.at(chain[d]) == d) chain[i] = chain[d], place[i] = place[d] + 1;
    }
    if (!chain[i]) chain[i] = ++chains, place[i] = 1;
    chain_end[chain[i]] = i;
    q.clock[chain[i]] = place[i];
    q.chain = chain[i];
    q.place = place[i];
  }
  return cudaSuccess;
}

void drain() {
  run_until([] { return false; });
}

void sync_device() {
  drain();
  join(g_host_clock, g_all_clock);
  san_all_launches_ordered();
}

void drain_stream(cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st) return;
  const unsigned long long id = st->id;
  const bool legacy = st == &legacy_stream();
  run_until([st, id, legacy] {
    if (g_queues.count(id)) return false;
    // Synchronising the legacy stream waits for every blocking stream too.
    if (legacy)
      for (const auto& [other, q] : g_queues)
        if (q.blocking) return false;
    return true;
  });
  join(g_host_clock, st->last_clock);
  if (legacy)
    for (const CUstream_st* b : blocking_streams()) join(g_host_clock, b->last_clock);
}

void wait_for_record(const CUevent_st* e) {
  run_until([e] { return !pending(e->record_seq); });
  join(g_host_clock, e->record_clock);
}

}  // namespace simt::detail
