// The CUDA runtime subset of the emulator: errors, streams, events and the deferred work queue.
// Every function has the real header's extern "C" signature, so an API nobody implemented is a
// link error. Device queries: device.cpp; memory and copies: memory.cpp; capture and graphs:
// graph.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"

namespace simt::detail {
namespace {

cudaError_t g_last_error = cudaSuccess;

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
  bool legacy = false, blocking = false;  // the legacy stream; a stream that syncs with it
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
CUstream_st g_legacy_stream, g_per_thread_stream;
std::set<CUstream_st*> g_streams;
std::set<CUevent_st*> g_events;

unsigned long long queue_id(const CUstream_st* st) {
  return st == &g_legacy_stream ? 1 : st == &g_per_thread_stream ? 2 : st->id;
}
bool pending(uint64_t seq) { return g_pending.count(seq) != 0; }

void join(Clock& into, const Clock& c) {
  for (const auto& [stream, seq] : c) {
    uint64_t& mine = into[stream];
    mine = std::max(mine, seq);
  }
}

// The streams that synchronise with the legacy one.
template <class F>
void for_each_blocking_stream(F f) {
  if (!(g_per_thread_stream.flags & cudaStreamNonBlocking)) f(&g_per_thread_stream);
  for (CUstream_st* s : g_streams)
    if (!(s->flags & cudaStreamNonBlocking)) f(s);
}

std::mt19937_64 g_order_rng;
bool g_order_seeded = false;
std::mt19937_64& order_rng() {
  if (!g_order_seeded) restart_stream_order();
  return g_order_rng;
}

}  // namespace

namespace {
// Whether the last node to finish was a kernel (a conditional node finishes after its body), and
// what that said when the running node started.
bool g_last_kernel = false, g_previous_kernel = false;
}  // namespace

bool previous_node_was_kernel() { return g_previous_kernel; }

void run_node(const Node& n) {
  g_previous_kernel = g_last_kernel;
  switch (n.kind) {
    case NodeKind::Kernel:
      run_kernel(n.kernel);
      break;
    case NodeKind::EventRecord:
      n.event->done = true;
      n.event->when = std::chrono::steady_clock::now();
      break;
    case NodeKind::Conditional:
      run_conditional(n);
      break;
    default:
      if (n.kind == NodeKind::Memcpy || n.kind == NodeKind::Memset) san_copy(n.dst, n.src, n.bytes);
      n.op();
      break;
  }
  g_last_kernel = n.kind == NodeKind::Kernel;
}

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "\nsimt: %s\nsimt: schedule seed SIMT_SEED=%llu (rerun with it to reproduce)\n", what.c_str(),
               static_cast<unsigned long long>(seed()));
  std::fflush(stderr);
  std::abort();
}

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) g_last_error = e;
  return e;
}

void forget_capture(const CUgraph_st* g) {
  for (CUevent_st* e : g_events)
    if (e->captured_in == g) e->captured_in = nullptr;
}

void end_forks(const CUgraph_st* g) {
  const auto end = [g](CUstream_st* s) {
    if (!s->forked || s->graph != g) return;
    s->capturing = s->forked = s->invalidated = false;
    s->graph = nullptr;
    s->frontier.clear();
  };
  for (CUstream_st* s : g_streams) end(s);
  end(&g_per_thread_stream);
}

bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

CUstream_st* resolve(cudaStream_t s) {
  if (is_legacy(s)) return &g_legacy_stream;
  if (s == cudaStreamPerThread) return &g_per_thread_stream;
  return g_streams.count(s) ? s : nullptr;
}

bool stream_is_capturing(cudaStream_t s) {
  const CUstream_st* st = resolve(s);
  return st && st->capturing;
}

bool any_capture() {
  if (g_per_thread_stream.capturing) return true;
  for (const CUstream_st* s : g_streams)
    if (s->capturing) return true;
  return false;
}

void invalidate_captures() {
  g_per_thread_stream.invalidated |= g_per_thread_stream.capturing;
  for (CUstream_st* s : g_streams) s->invalidated |= s->capturing;
}

cudaError_t forbid_in_capture() {
  bool strict = g_per_thread_stream.capturing && g_per_thread_stream.mode != cudaStreamCaptureModeRelaxed;
  for (const CUstream_st* s : g_streams) strict |= s->capturing && s->mode != cudaStreamCaptureModeRelaxed;
  if (!strict) return cudaSuccess;
  invalidate_captures();
  return set_error(cudaErrorStreamCaptureUnsupported);
}

// Queues n on st's queue (eager work), after what the legacy stream's rules and, when given, the
// event's last record order before it.
void enqueue(Node&& n, CUstream_st* st, const CUevent_st* waits_for = nullptr, const Clock* host = nullptr);

cudaError_t submit(Node&& n, cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing) {
    if (st->invalidated) return set_error(cudaErrorStreamCaptureInvalidated);
    if (n.kind == NodeKind::EventRecord) fatal("event records cannot become graph nodes");
    // A GPU's graph keeps programmatic edges one to one (core/launch.h, follows_kernels): an
    // overlapped launch that does not follow exactly one kernel node nothing else follows yet is
    // captured as an ordinary one, as launch_overlapped does on a GPU.
    if (n.kind == NodeKind::Kernel && n.kernel.overlapped) {
      const auto& nodes = st->graph->nodes;
      bool one_to_one = st->frontier.size() == 1 && nodes[st->frontier[0]]->node.kind == NodeKind::Kernel;
      for (size_t i = 0; one_to_one && i < nodes.size(); ++i)
        for (size_t d : nodes[i]->node.deps) one_to_one &= d != st->frontier[0];
      n.kernel.overlapped = one_to_one;
    }
    n.deps = std::move(st->frontier);
    st->frontier = {st->graph->nodes.size()};
    st->graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{std::move(n), nullptr, {nullptr}}));
    return cudaSuccess;
  }
  // The legacy stream synchronises with every other stream, so it cannot join a capture.
  if (is_legacy(s) && any_capture()) {
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureImplicit);
  }
  // Work on the legacy stream or a blocking stream waits for earlier legacy-stream work.
  if (!(st->flags & cudaStreamNonBlocking)) settle_legacy();
  enqueue(std::move(n), st);
  return cudaSuccess;
}

void enqueue(Node&& n, CUstream_st* st, const CUevent_st* waits_for, const Clock* host) {
  const bool legacy = st == &g_legacy_stream, blocking = !legacy && !(st->flags & cudaStreamNonBlocking);
  Queued q{std::move(n), ++g_next_seq, st->last_seq, {}, host ? *host : g_host_clock};
  join(q.clock, st->last_clock);
  if (waits_for) {
    if (pending(waits_for->record_seq)) q.after.push_back(waits_for->record_seq);
    join(q.clock, waits_for->record_clock);
  }
  // The legacy stream waits for every blocking stream's earlier work, and they for its.
  for (const auto& [id, other] : g_queues)
    if (legacy ? other.blocking : blocking && other.legacy) q.after.push_back(other.nodes.back().seq);
  if (legacy) for_each_blocking_stream([&](CUstream_st* b) { join(q.clock, b->last_clock); });
  if (blocking) join(q.clock, g_legacy_stream.last_clock);
  const unsigned long long id = queue_id(st);
  q.clock[id] = q.seq;
  // An overlapped launch that also waits for another stream is an ordinary one: it overlaps
  // only the kernel before it on its own stream (the rule run_until keeps by running it next).
  if (q.node.kind == NodeKind::Kernel && !q.after.empty()) q.node.kernel.overlapped = false;
  st->last_seq = q.seq;
  st->last_clock = q.clock;
  g_pending.insert(q.seq);
  Queue& queue = g_queues[id];
  queue.legacy = legacy;
  queue.blocking = blocking;
  queue.nodes.push_back(std::move(q));
}

void defer_on_legacy(Node&& n) { g_legacy_pending.emplace_back(std::move(n), g_host_clock); }

void settle_legacy() {
  auto nodes = std::move(g_legacy_pending);
  g_legacy_pending.clear();
  for (auto& [n, host] : nodes) enqueue(std::move(n), &g_legacy_stream, nullptr, &host);
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
  const unsigned long long id = queue_id(st);
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
    chain[i] = 0;
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
  const unsigned long long id = queue_id(st);
  const bool legacy = st == &g_legacy_stream;
  run_until([st, id, legacy] {
    if (g_queues.count(id)) return false;
    // Synchronising the legacy stream waits for every blocking stream too.
    if (legacy)
      for (const auto& [other, q] : g_queues)
        if (q.blocking) return false;
    return true;
  });
  join(g_host_clock, st->last_clock);
  if (legacy) for_each_blocking_stream([](CUstream_st* b) { join(g_host_clock, b->last_clock); });
}

cudaError_t submit_kernel(KernelLaunch&& k, cudaStream_t stream) {
  const dim3 b = k.block, g = k.grid;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (threads == 0 || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
      g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return set_error(cudaErrorInvalidConfiguration);
  if (k.smem > dynamic_smem_limit(k.func)) return set_error(cudaErrorInvalidValue);
  // Portable cluster sizes only (no cudaFuncAttributeNonPortableClusterSizeAllowed), along x.
  if (k.cluster == 0 || k.cluster > 8 || g.x % k.cluster != 0) return set_error(cudaErrorInvalidClusterSize);
  Node n(NodeKind::Kernel);
  n.func = k.func;
  n.kernel = std::move(k);
  return submit(std::move(n), stream);
}

}  // namespace simt::detail

using namespace simt::detail;

// ---- errors ----
cudaError_t cudaGetLastError() {
  const cudaError_t e = g_last_error;
  g_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return g_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidClusterSize:
      return "cudaErrorInvalidClusterSize";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit:
      return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureMerge:
      return "cudaErrorStreamCaptureMerge";
    case cudaErrorStreamCaptureUnmatched:
      return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined:
      return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorGraphExecUpdateFailure:
      return "cudaErrorGraphExecUpdateFailure";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorUnknown:
      return "cudaErrorUnknown";
    default:
      return "cudaErrorUnrecognized(simt)";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidClusterSize:
      return "cluster size is out of range";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureMerge:
      return "operation would have resulted in a merge of two independent capture sequences";
    case cudaErrorStreamCaptureUnmatched:
      return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined:
      return "capturing stream has unjoined work";
    case cudaErrorGraphExecUpdateFailure:
      return "the graph update was not performed because it included changes which violated constraints specific to "
             "instantiated graph update";
    default:
      return cudaGetErrorName(e);
  }
}

// ---- streams ----
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (!s) return set_error(cudaErrorInvalidValue);
  static unsigned long long ids = 2;  // 1 and 2: the legacy and per-thread streams
  *s = new CUstream_st;
  (*s)->flags = flags;
  (*s)->id = ++ids;
  g_streams.insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  const CUstream_st* st = resolve(s);
  if (!st || !id) return set_error(!st ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
  *id = is_legacy(s) ? 1 : s == cudaStreamPerThread ? 2 : st->id;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!g_streams.count(s)) return set_error(cudaErrorInvalidResourceHandle);
  if (s->capturing) return set_error(cudaErrorIllegalState);
  g_streams.erase(s);
  delete s;  // its queued work still runs: the queue holds nodes, not streams
  return cudaSuccess;
}

static cudaError_t sync_stream(cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing || (is_legacy(s) && any_capture())) {
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureUnsupported);
  }
  if (is_legacy(s)) settle_legacy();
  drain_stream(s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return sync_stream(s); }
cudaError_t cudaStreamQuery(cudaStream_t s) { return sync_stream(s); }  // runs the work, then "done"

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  CUstream_st* st = resolve(s);
  if (!st || !g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (!e->captured_in) {
    // An eager wait is a node of its own (it runs nothing): the stream's later work, and the
    // legacy stream's rules, see it as work of the stream that waits for the event's last record.
    if (!st->capturing && e->recorded) {
      if (is_legacy(s) || !(st->flags & cudaStreamNonBlocking)) settle_legacy();
      Node wait(NodeKind::HostOp);
      wait.op = [] {};
      enqueue(std::move(wait), st, e);
    }
    return cudaSuccess;
  }
  if (st->capturing && st->graph != e->captured_in) {  // two captures cannot merge
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureMerge);
  }
  if (!st->capturing) {  // a fork: the stream joins the capture the event was recorded in
    if (is_legacy(s)) {
      invalidate_captures();
      return set_error(cudaErrorStreamCaptureImplicit);
    }
    st->capturing = st->forked = true;
    st->invalidated = st->into_existing = false;
    st->mode = e->captured_mode;
    st->graph = e->captured_in;
    st->capture_id = e->captured_id;
    st->frontier.clear();
  }
  for (size_t d : e->captured_frontier)  // a join, or the fork's first dependencies
    if (std::find(st->frontier.begin(), st->frontier.end(), d) == st->frontier.end()) st->frontier.push_back(d);
  return cudaSuccess;
}

// ---- events ----
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return set_error(cudaErrorInvalidValue);
  *e = new CUevent_st;
  (*e)->flags = flags;
  g_events.insert(*e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  g_events.erase(e);
  // A record still queued would touch it: run the queue first (destroy is lazy on a GPU too).
  drain();
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st || !g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing) {  // inside a capture an event only marks a fork or join point
    if (st->invalidated) return set_error(cudaErrorStreamCaptureInvalidated);
    e->captured_in = st->graph;
    e->captured_frontier = st->frontier;
    e->captured_mode = st->mode;
    e->captured_id = st->capture_id;
    return cudaSuccess;
  }
  e->captured_in = nullptr;
  Node n(NodeKind::EventRecord);
  n.event = e;
  if (cudaError_t err = submit(std::move(n), s)) return err;
  e->recorded = true;
  e->done = false;
  e->record_seq = st->last_seq;
  e->record_clock = st->last_clock;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (cudaError_t err = forbid_in_capture()) return err;
  if (e->recorded) {
    run_until([e] { return !pending(e->record_seq); });
    join(g_host_clock, e->record_clock);
  }
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }  // run, then "done"

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms || !g_events.count(a) || !g_events.count(b)) return set_error(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->done || !b->done) return set_error(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}
