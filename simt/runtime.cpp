// The CUDA runtime subset of the emulator: errors, streams and events (the queues they feed: queues.cpp).
// Every function has the real header's extern "C" signature, so an API nobody implemented is a
// link error. Device queries: device.cpp; memory and copies: memory.cpp; capture and graphs:
// graph.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"

namespace simt::detail {
namespace {

cudaError_t g_last_error = cudaSuccess;

// The legacy and per-thread streams, with the ids cudaStreamGetId gives them.
CUstream_st make_builtin_stream(unsigned long long id) {
  CUstream_st s;
  s.id = id;
  return s;
}
CUstream_st g_legacy_stream = make_builtin_stream(1), g_per_thread_stream = make_builtin_stream(2);
std::set<CUstream_st*> g_streams;
std::set<CUevent_st*> g_events;

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

std::vector<CUstream_st*> blocking_streams() {
  std::vector<CUstream_st*> out;
  if (!(g_per_thread_stream.flags & cudaStreamNonBlocking)) out.push_back(&g_per_thread_stream);
  for (CUstream_st* st : g_streams)
    if (!(st->flags & cudaStreamNonBlocking)) out.push_back(st);
  return out;
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

// A GPU refuses the call inside a capture (the H200's driver 580 answered
// cudaErrorStreamCaptureUnsupported for the capturing stream), and the capture is then lost.
cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  const CUstream_st* st = resolve(s);
  if (!st || !id) return set_error(!st ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
  if (st->capturing) {
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureUnsupported);
  }
  if (const cudaError_t e = forbid_in_capture(); e != cudaSuccess) return e;
  *id = st->id;
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
    wait_for_record(e);
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
