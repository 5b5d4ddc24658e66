// Stream capture and CUDA graphs. While a stream captures, submit() (runtime.cpp) appends its
// work to the stream's graph as a linear chain of nodes; a kernel node owns the by-value copy of
// its arguments taken at launch, memcpy nodes keep pointers and copy at replay. Instantiation
// copies the nodes; a launch queues those copies like any other work.
// Conditional nodes (WHILE, and IF with one body) join the chain through cudaGraphAddNode; their
// body is captured with cudaStreamBeginCaptureToGraph. When the node's turn comes it reads its
// handle, which kernels set with cudaGraphSetConditional, and runs the body's nodes in turn,
// again while the value stays non-zero. Any graph that is not a chain is refused, not guessed at.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "simt/runtime_internal.h"

using namespace simt::detail;

namespace {
unsigned long long g_capture_ids = 0;

struct Conditional {
  const CUgraph_st* graph;  // the graph the handle was made for
  unsigned value, default_value;
  bool assign_default;
};
std::vector<Conditional> g_conditionals;  // handle h is g_conditionals[h - 1]

Conditional& conditional(cudaGraphConditionalHandle h, const char* who) {
  if (h == 0 || h > g_conditionals.size())
    fatal(std::string(who) + ": conditional handle " + std::to_string(h) + " was never created");
  return g_conditionals[h - 1];
}

// The emulator's graphs are chains: a new node may depend on the last one only (or on nothing
// in an empty graph).
void require_chain_end(const CUgraph_st* g, const cudaGraphNode_t* deps, size_t n, const char* who) {
  const bool ok = g->nodes.empty() ? n == 0 : n == 1 && deps && deps[0] == g->nodes.back().get();
  if (!ok) fatal(std::string(who) + ": only a linear chain of nodes is emulated (depend on the graph's last node)");
}

std::vector<Node> copy_nodes(const CUgraph_st& g) {
  std::vector<Node> out;
  for (const auto& n : g.nodes) {
    Node c = n->node;
    if (c.kind == NodeKind::Conditional) c.body = std::make_shared<const std::vector<Node>>(copy_nodes(*n->body));
    out.push_back(std::move(c));
  }
  return out;
}

// Same topology: node kinds, kernel functions, conditional types and bodies.
bool same_topology(const std::vector<Node>& a, const CUgraph_st& g, cudaGraphExecUpdateResult* why, size_t* at) {
  if (a.size() != g.nodes.size()) return *why = cudaGraphExecUpdateErrorTopologyChanged, *at = g.nodes.size(), false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Node& now = g.nodes[i]->node;
    *at = i;
    if (a[i].kind != now.kind || a[i].cond_type != now.cond_type)
      return *why = cudaGraphExecUpdateErrorNodeTypeChanged, false;
    if (a[i].func != now.func) return *why = cudaGraphExecUpdateErrorFunctionChanged, false;
    size_t inner = 0;  // a difference inside a body is reported at its conditional node
    if (now.kind == NodeKind::Conditional && !same_topology(*a[i].body, *g.nodes[i]->body, why, &inner)) return false;
  }
  return true;
}

std::vector<cudaGraphConditionalHandle> default_handles(const CUgraph_st* g) {
  std::vector<cudaGraphConditionalHandle> out;
  for (size_t i = 0; i < g_conditionals.size(); ++i)
    if (g_conditionals[i].graph == g && g_conditionals[i].assign_default) out.push_back(i + 1);
  return out;
}
}  // namespace

namespace simt::detail {
void set_conditional(cudaGraphConditionalHandle h, unsigned value) {
  conditional(h, "cudaGraphSetConditional").value = value;
}

void run_conditional(const Node& n) {
  const Conditional& c = conditional(n.cond, "conditional node");
  if (n.cond_type == cudaGraphCondTypeIf) {
    if (c.value)
      for (const Node& b : *n.body) run_node(b);
    return;
  }
  constexpr uint64_t kMaxTrips = 1ull << 24;
  for (uint64_t trips = 0; c.value; ++trips) {
    if (trips == kMaxTrips) fatal("a WHILE node's body ran 2^24 times: nothing clears its condition");
    for (const Node& b : *n.body) run_node(b);
  }
}
}  // namespace simt::detail

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* out, cudaGraph_t g, unsigned default_value,
                                             unsigned flags) {
  if (!out || !g || (flags & ~unsigned(cudaGraphCondAssignDefault))) return set_error(cudaErrorInvalidValue);
  g_conditionals.push_back(Conditional{g, default_value, default_value, (flags & cudaGraphCondAssignDefault) != 0});
  *out = g_conditionals.size();
  return cudaSuccess;
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps,
                             const cudaGraphEdgeData* edges, size_t num_deps, cudaGraphNodeParams* params) {
  if (!out || !g || !params) return set_error(cudaErrorInvalidValue);
  if (params->type != cudaGraphNodeTypeConditional) fatal("cudaGraphAddNode: only conditional nodes are emulated");
  const cudaConditionalNodeParams& c = params->conditional;
  if (c.type != cudaGraphCondTypeWhile && c.type != cudaGraphCondTypeIf)
    fatal("cudaGraphAddNode: only WHILE and IF conditional nodes are emulated");
  if (c.size != 1) return set_error(cudaErrorInvalidValue);
  if (conditional(c.handle, "cudaGraphAddNode").graph != g) return set_error(cudaErrorInvalidValue);
  if (edges) fatal("cudaGraphAddNode: edge data is not emulated");
  require_chain_end(g, deps, num_deps, "cudaGraphAddNode");
  auto node = std::make_unique<CUgraphNode_st>(CUgraphNode_st{Node(NodeKind::Conditional), nullptr, {nullptr}});
  node->node.cond = c.handle;
  node->node.cond_type = c.type;
  node->body = std::make_shared<CUgraph_st>();
  node->body_out[0] = node->body.get();
  params->conditional.phGraph_out = node->body_out;
  *out = node.get();
  g->nodes.push_back(std::move(node));
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps,
                                          const cudaGraphEdgeData* edges, size_t num_deps, cudaStreamCaptureMode mode) {
  CUstream_st* st = resolve(s);
  if (!st || !g) return set_error(!st ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
  if (is_legacy(s)) return set_error(cudaErrorStreamCaptureUnsupported);
  if (st->capturing) return set_error(cudaErrorIllegalState);
  if (edges) fatal("cudaStreamBeginCaptureToGraph: edge data is not emulated");
  require_chain_end(g, deps, num_deps, "cudaStreamBeginCaptureToGraph");
  st->capturing = true;
  st->invalidated = false;
  st->into_existing = true;
  st->mode = mode;
  st->graph = g;
  st->capture_id = ++g_capture_ids;
  return cudaSuccess;
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t* deps, const cudaGraphEdgeData* edges,
                                                size_t num_deps, unsigned flags) {
  const CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (!st->capturing) return set_error(cudaErrorIllegalState);
  if (flags != cudaStreamSetCaptureDependencies && flags != cudaStreamAddCaptureDependencies)
    return set_error(cudaErrorInvalidValue);
  if (edges) fatal("cudaStreamUpdateCaptureDependencies: edge data is not emulated");
  require_chain_end(st->graph, deps, num_deps, "cudaStreamUpdateCaptureDependencies");
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (is_legacy(s)) return set_error(cudaErrorStreamCaptureUnsupported);
  if (st->capturing) return set_error(cudaErrorIllegalState);
  st->capturing = true;
  st->invalidated = false;
  st->mode = mode;
  st->graph = new CUgraph_st;
  st->capture_id = ++g_capture_ids;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  CUstream_st* st = resolve(s);
  if (!st || (!graph && !st->into_existing)) return set_error(cudaErrorInvalidValue);
  if (!st->capturing) return set_error(cudaErrorIllegalState);
  forget_capture(st->graph);
  st->capturing = false;
  if (st->into_existing) {  // the graph belongs to the caller (or to a conditional node)
    st->into_existing = false;
    if (graph) *graph = st->invalidated ? nullptr : st->graph;
    st->graph = nullptr;
    return st->invalidated ? set_error(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
  }
  if (st->invalidated) {
    delete st->graph;
    st->graph = nullptr;
    *graph = nullptr;
    return set_error(cudaErrorStreamCaptureInvalidated);
  }
  *graph = st->graph;
  st->graph = nullptr;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  const CUstream_st* st = resolve(s);
  if (!st || !status) return set_error(cudaErrorInvalidValue);
  *status = !st->capturing    ? cudaStreamCaptureStatusNone
            : st->invalidated ? cudaStreamCaptureStatusInvalidated
                              : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* num_deps) {
  if (cudaError_t e = cudaStreamIsCapturing(s, status)) return e;
  const CUstream_st* st = resolve(s);
  const bool on = st->capturing;
  if (id) *id = on ? st->capture_id : 0;
  if (graph) *graph = on ? st->graph : nullptr;
  // A linear chain: the only dependency of the next node is the last one.
  static thread_local cudaGraphNode_t last;
  last = on && !st->graph->nodes.empty() ? st->graph->nodes.back().get() : nullptr;
  if (deps) *deps = last ? &last : nullptr;
  if (edges) *edges = nullptr;
  if (num_deps) *num_deps = last ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* count) {
  if (!g || !count) return set_error(cudaErrorInvalidValue);
  if (nodes) {
    for (size_t i = 0; i < *count; ++i) nodes[i] = i < g->nodes.size() ? g->nodes[i].get() : nullptr;
  }
  *count = g->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t n, cudaGraphNodeType* type) {
  if (!n || !type) return set_error(cudaErrorInvalidValue);
  switch (n->node.kind) {
    case NodeKind::Kernel:
      *type = cudaGraphNodeTypeKernel;
      break;
    case NodeKind::Memcpy:
      *type = cudaGraphNodeTypeMemcpy;
      break;
    case NodeKind::Memset:
      *type = cudaGraphNodeTypeMemset;
      break;
    case NodeKind::HostOp:
      *type = cudaGraphNodeTypeHost;
      break;
    case NodeKind::EventRecord:
      *type = cudaGraphNodeTypeEventRecord;
      break;
    case NodeKind::Conditional:
      *type = cudaGraphNodeTypeConditional;
      break;
  }
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  if (!g) return set_error(cudaErrorInvalidValue);
  delete g;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (!exec || !g) return set_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st;
  (*exec)->nodes = copy_nodes(*g);
  (*exec)->defaults = default_handles(g);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec) return set_error(cudaErrorInvalidValue);
  drain();  // a queued launch still refers to nothing of it (nodes were copied), but be tidy
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec) return set_error(cudaErrorInvalidValue);
  if (stream_is_capturing(s)) fatal("cudaGraphLaunch into a capturing stream (child graphs) is not emulated");
  if (!exec->defaults.empty()) {  // the launch starts by giving those handles their defaults
    Node reset(NodeKind::HostOp);
    reset.op = [handles = exec->defaults] {
      for (cudaGraphConditionalHandle h : handles) {
        Conditional& c = conditional(h, "cudaGraphLaunch");
        c.value = c.default_value;
      }
    };
    if (cudaError_t e = submit(std::move(reset), s)) return e;
  }
  for (const Node& n : exec->nodes) {
    Node copy = n;
    if (cudaError_t e = submit(std::move(copy), s)) return e;
  }
  return cudaSuccess;
}

// Same number of nodes, same kinds, same kernel functions: take the new arguments. Otherwise
// CUDA refuses the update and says why in `info`.
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g, cudaGraphExecUpdateResultInfo* info) {
  if (!exec || !g) return set_error(cudaErrorInvalidValue);
  auto fail = [&](cudaGraphExecUpdateResult why, size_t i) {
    if (info) {
      info->result = why;
      info->errorNode = i < g->nodes.size() ? g->nodes[i].get() : nullptr;
      info->errorFromNode = nullptr;
    }
    return set_error(cudaErrorGraphExecUpdateFailure);
  };
  cudaGraphExecUpdateResult why = cudaGraphExecUpdateSuccess;
  size_t at = 0;
  if (!same_topology(exec->nodes, *g, &why, &at)) return fail(why, at);
  exec->nodes = copy_nodes(*g);
  exec->defaults = default_handles(g);
  if (info) *info = cudaGraphExecUpdateResultInfo{cudaGraphExecUpdateSuccess, nullptr, nullptr};
  return cudaSuccess;
}
