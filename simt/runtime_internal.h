// State shared by the emulator's runtime files (not included by user code).
// Work is a Node: a kernel launch, a copy, a memset, a host-side op (cuBLAS GEMM) or an event
// record. Nodes submitted to a stream go to the stream's queue, behind what it waits for on
// other streams (events, the legacy stream's rules), and run only at synchronisation points, the
// next one drawn among the streams' ready heads (queues.cpp); on a capturing stream they become the
// nodes of the stream's graph instead, each depending on what came before it on its stream and
// on the events that stream waited for (graph.cpp).
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "simt/simt.h"

namespace simt::detail {

enum class NodeKind { Kernel, Memcpy, Memset, HostOp, EventRecord, Conditional };

struct Node {
  explicit Node(NodeKind k) : kind(k) {}
  NodeKind kind;
  const void* func = nullptr;  // kernel function, or the identity of a host op (GEMM)
  KernelLaunch kernel{};       // Kernel
  std::function<void()> op;    // Memcpy, Memset, HostOp: runs the whole operation
  // Memcpy, Memset: the bytes written at dst and read at src (nullptr: a memset, or a staged
  // host source), for the memory checks (san_copy).
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  CUevent_st* event = nullptr;  // EventRecord
  // Conditional: its handle, its type, and (in an instantiated graph) the body's copied nodes.
  cudaGraphConditionalHandle cond = 0;
  cudaGraphConditionalNodeType cond_type = cudaGraphCondTypeWhile;
  std::shared_ptr<const std::vector<Node>> body;
  // In a graph: the indices of the nodes of the same graph this one depends on.
  std::vector<size_t> deps;
};

void run_node(const Node& n);  // runtime.cpp
// Whether the node run before the running one was a kernel: an overlapped launch overlaps only
// a kernel (after a copy, a memset, an event or a conditional node it is an ordinary one).
bool previous_node_was_kernel();
void run_conditional(const Node& n);  // graph.cpp: evaluates the handle, runs the body in turn

[[noreturn]] void fatal(const std::string& what);  // prints the report and the seed, aborts

// Streams: the legacy default stream (0 / cudaStreamLegacy), cudaStreamPerThread, created ones.
CUstream_st* resolve(cudaStream_t s);  // nullptr for a handle we never made
bool is_legacy(cudaStream_t s);
void invalidate_captures();  // every capture in progress (not relaxed)
bool any_capture();
void forget_capture(const CUgraph_st* g);      // events recorded in it are plain again
void end_forks(const CUgraph_st* g);           // the streams that joined its capture stop capturing
cudaError_t submit(Node&& n, cudaStream_t s);  // enqueue, or append to the stream's capture
// The created and per-thread streams that synchronise with the legacy one (runtime.cpp).
std::vector<CUstream_st*> blocking_streams();
// Queues an executable graph's nodes on s in `order` (a topological order of their deps), each
// ordered for the race checks after its dependencies in the graph, not after the node before it.
cudaError_t submit_graph(const std::vector<Node>& nodes, const std::vector<size_t>& order, cudaStream_t s);
// Submits eager work and runs queued nodes until it has run (a copy the host waits for).
cudaError_t submit_and_wait(Node&& n, cudaStream_t s);
bool stream_is_capturing(cudaStream_t s);
// A call CUDA forbids while any stream captures (global/thread-local modes): returns 900 and
// invalidates those captures, else cudaSuccess.
cudaError_t forbid_in_capture();
void drain();                       // runs every queued node (the host learns nothing from it: cudaEventDestroy)
void sync_device();                 // drain(), and the host has waited for every node (cudaDeviceSynchronize)
void drain_stream(cudaStream_t s);  // runs queued nodes until s's (and what it waits for) have run
void run_until(const std::function<bool()>& done);  // runs queued nodes, drawn in turn, until done()

// Happens-before between queued nodes, for the sanitizer's check across streams: a vector clock
// for each node (entry -> the last node of it ordered before), from its stream's order, the
// events it waited for, the legacy stream's rules and what the host had synchronised with when it
// was submitted. Entries are streams (their nodes' seqs), and within one graph launch its chains
// of nodes (submit_graph), which only that launch's nodes carry: the work after a graph knows it
// through the stream's entry.
using Clock = std::map<unsigned long long, uint64_t>;
constexpr unsigned long long kGraphChains = 1ull << 48;  // chain entries from here up
struct NodeId {
  unsigned long long stream = 0;  // 0: none (run outside the queues: ordered before what follows)
  uint64_t seq = 0;
  unsigned long long chain = 0;  // a graph launch's node: its chain and place in it (else 0)
  uint64_t place = 0;
};
struct RunningNode {
  NodeId id;
  const Clock* clock = nullptr;
};
RunningNode running_node();
// Whether node n completed before the running node started, by the rules above.
bool ordered_before_running(const NodeId& n);
// Queues n on st's queue (eager work, queues.cpp), after what the legacy stream's rules and, when
// given, the event's last record order before it; `host`: what the host had synchronised with
// when the work was issued (default: now).
void enqueue(Node&& n, CUstream_st* st, const CUevent_st* waits_for = nullptr, const Clock* host = nullptr);
// Runs queued nodes until the event's last record has run; the host then knows what it follows.
void wait_for_record(const CUevent_st* e);
// The draws that pick which stream's ready work runs next start again from the schedule seed
// (simt::set_seed does this).
void restart_stream_order();
// Queues the legacy-stream work nothing has ordered yet (a pageable synchronous copy's DMA, a
// synchronous memset) behind what is queued: at a point that orders the legacy stream.
void settle_legacy();
void run_kernel(const KernelLaunch& k);  // scheduler.cpp
// Sets threadIdx, blockIdx, blockDim, gridDim (coords.cpp) for the thread about to run.
void set_coords(const uint3& thread, const uint3& block, const dim3& block_dim, const dim3& grid_dim);
cudaError_t set_error(cudaError_t e);  // records e for cudaGetLastError; returns it

// Queues work on the legacy stream that nothing orders yet (settle_legacy orders it).
void defer_on_legacy(Node&& n);

// The emulated device's limits (device.cpp reports them, memory.cpp and launches enforce them).
constexpr size_t kDeviceMemory = 80ull << 30;
constexpr int kMaxDynamicSmem = 227 << 10;
size_t dynamic_smem_limit(const void* func);  // bytes a launch of func may ask for (device.cpp)
size_t device_bytes_in_use();                 // memory.cpp

enum class MemKind { Device, Pinned, Pageable };
// Classifies [p, p+n); a range that starts in an allocation but overruns it is reported as
// Device/Pinned with ok == false.
MemKind classify(const void* p, size_t n, bool* ok);

}  // namespace simt::detail

struct CUstream_st {
  unsigned flags = 0;
  unsigned long long id = 0;  // cudaStreamGetId: never reused within the process
  bool capturing = false, invalidated = false;
  bool into_existing = false;  // cudaStreamBeginCaptureToGraph: the graph is not the capture's own
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  CUgraph_st* graph = nullptr;
  unsigned long long capture_id = 0;
  // Joined another stream's capture by waiting for an event recorded in it (a fork): ends with
  // that capture, and cannot end it.
  bool forked = false;
  std::vector<size_t> frontier;  // the nodes the stream's next captured node depends on
  size_t first_node = 0;         // the graph's size when this (origin) stream began its capture
  // Eager: the last node submitted to it, and its clock.
  uint64_t last_seq = 0;
  simt::detail::Clock last_clock;
};

struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false, done = false;
  std::chrono::steady_clock::time_point when{};
  uint64_t record_seq = 0;  // the queued node of its last eager record, and that node's clock
  simt::detail::Clock record_clock;
  CUgraph_st* captured_in = nullptr;  // recorded inside this capture (fork and join points only)
  // Recorded inside a capture: the recording stream's frontier and capture, which a stream that
  // waits for the event takes on.
  std::vector<size_t> captured_frontier;
  cudaStreamCaptureMode captured_mode = cudaStreamCaptureModeGlobal;
  unsigned long long captured_id = 0;
};

struct CUgraphNode_st {
  simt::detail::Node node;
  std::shared_ptr<CUgraph_st> body;  // a conditional node's body graph (phGraph_out[0])
  cudaGraph_t body_out[1] = {nullptr};
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
};

struct CUgraphExec_st {
  std::vector<simt::detail::Node> nodes;  // copies: updating the graph later changes nothing
  // The graph's conditional handles created with cudaGraphCondAssignDefault: reset per launch.
  std::vector<cudaGraphConditionalHandle> defaults;
  // Launches so far: with the schedule seed, what draws each launch's order of the nodes, so that
  // a graph's n-th launch runs them in the same order whatever else the process ran.
  unsigned long long launches = 0;
};
