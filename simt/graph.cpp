// Stream capture and CUDA graphs. While a stream captures, submit() (runtime.cpp) appends its
// work to the stream's graph as a node that depends on the stream's frontier: the node before it
// on the stream, and the frontiers of the events the stream waited for. A stream that waits for an
// event recorded inside a capture joins that capture (a fork), and the capture ends only when
// every node is an ancestor of the origin stream's frontier (joined back), as CUDA requires. A
// kernel node owns the by-value copy of its arguments taken at launch, memcpy nodes keep pointers
// and copy at replay. Instantiation copies the nodes; a launch queues those copies in a
// topological order drawn from the schedule seed (SIMT_SEED) and the executable graph's launch
// count, so that a dependency missing between two streams' work shows up as work run in the
// wrong order under some launches.
// Conditional nodes (WHILE, and IF with one body) join the graph through cudaGraphAddNode; their
// body is captured with cudaStreamBeginCaptureToGraph. When the node's turn comes it reads its
// handle, which kernels set with cudaGraphSetConditional, and runs the body's nodes in the order
// they were captured, again while the value stays non-zero.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <random>
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

// The indices in g of the nodes a new node depends on; each must be a node of g.
std::vector<size_t> node_indices(const CUgraph_st* g, const cudaGraphNode_t* deps, size_t n, const char* who) {
  if (n > 0 && !deps) fatal(std::string(who) + ": dependencies counted but not given");
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    size_t at = 0;
    while (at < g->nodes.size() && g->nodes[at].get() != deps[i]) ++at;
    if (at == g->nodes.size()) fatal(std::string(who) + ": a dependency is not a node of the graph");
    if (std::find(out.begin(), out.end(), at) == out.end()) out.push_back(at);
  }
  return out;
}

// Whether every node from `first` on is the origin's frontier or an ancestor of it.
bool joined(const CUgraph_st& g, const std::vector<size_t>& frontier, size_t first) {
  std::vector<char> seen(g.nodes.size(), 0);
  std::vector<size_t> todo = frontier;
  while (!todo.empty()) {
    const size_t i = todo.back();
    todo.pop_back();
    if (seen[i]) continue;
    seen[i] = 1;
    for (size_t d : g.nodes[i]->node.deps) todo.push_back(d);
  }
  for (size_t i = first; i < g.nodes.size(); ++i)
    if (!seen[i]) return false;
  return true;
}

// A topological order of nodes (by their deps), each step taking one of the ready nodes at random,
// except that a kernel captured overlapped runs right after the kernel it overlaps (its one
// dependency), as the sanitizer pairs an overlapped kernel with the node run just before it.
std::vector<size_t> drawn_order(const std::vector<Node>& nodes, std::mt19937_64& rng) {
  std::vector<size_t> waiting(nodes.size(), 0), ready, order;
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    waiting[i] = nodes[i].deps.size();
    for (size_t d : nodes[i].deps) users[d].push_back(i);
    if (waiting[i] == 0) ready.push_back(i);
  }
  const auto overlaps_last = [&](size_t u) {
    return !order.empty() && nodes[u].kind == NodeKind::Kernel && nodes[u].kernel.overlapped &&
           nodes[u].deps.size() == 1 && nodes[u].deps[0] == order.back();
  };
  while (!ready.empty()) {
    const auto next = std::find_if(ready.begin(), ready.end(), overlaps_last);
    const size_t pick = next != ready.end() ? size_t(next - ready.begin())
                        : ready.size() == 1 ? 0
                                            : size_t(rng() % ready.size());
    const size_t i = ready[pick];
    ready.erase(ready.begin() + long(pick));
    order.push_back(i);
    for (size_t u : users[i])
      if (--waiting[u] == 0) ready.push_back(u);
  }
  if (order.size() != nodes.size()) fatal("a graph's dependencies form a cycle");
  return order;
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
    if (a[i].deps != now.deps) return *why = cudaGraphExecUpdateErrorTopologyChanged, false;
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
  std::vector<size_t> after = node_indices(g, deps, num_deps, "cudaGraphAddNode");
  auto node = std::make_unique<CUgraphNode_st>(CUgraphNode_st{Node(NodeKind::Conditional), nullptr, {nullptr}});
  node->node.deps = std::move(after);
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
  st->frontier = node_indices(g, deps, num_deps, "cudaStreamBeginCaptureToGraph");
  st->first_node = g->nodes.size();
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
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (!st->capturing) return set_error(cudaErrorIllegalState);
  if (flags != cudaStreamSetCaptureDependencies && flags != cudaStreamAddCaptureDependencies)
    return set_error(cudaErrorInvalidValue);
  if (edges) fatal("cudaStreamUpdateCaptureDependencies: edge data is not emulated");
  const std::vector<size_t> given = node_indices(st->graph, deps, num_deps, "cudaStreamUpdateCaptureDependencies");
  if (flags == cudaStreamSetCaptureDependencies) st->frontier.clear();
  for (size_t d : given)
    if (std::find(st->frontier.begin(), st->frontier.end(), d) == st->frontier.end()) st->frontier.push_back(d);
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
  st->frontier.clear();
  st->first_node = 0;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  CUstream_st* st = resolve(s);
  if (!st || (!graph && !st->into_existing)) return set_error(cudaErrorInvalidValue);
  if (!st->capturing) return set_error(cudaErrorIllegalState);
  if (st->forked) return set_error(cudaErrorStreamCaptureUnmatched);  // only the origin ends it
  const bool unjoined = !st->invalidated && !joined(*st->graph, st->frontier, st->first_node);
  end_forks(st->graph);
  forget_capture(st->graph);
  st->capturing = false;
  st->frontier.clear();
  if (unjoined) {  // CUDA ends the capture and returns no graph
    if (!st->into_existing) delete st->graph;
    st->into_existing = false;
    st->graph = nullptr;
    if (graph) *graph = nullptr;
    return set_error(cudaErrorStreamCaptureUnjoined);
  }
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
  static thread_local std::vector<cudaGraphNode_t> frontier;
  frontier.clear();
  if (on)
    for (size_t d : st->frontier) frontier.push_back(st->graph->nodes[d].get());
  if (deps) *deps = frontier.empty() ? nullptr : frontier.data();
  if (edges) *edges = nullptr;
  if (num_deps) *num_deps = frontier.size();
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

// Each dependency is an edge; a kernel captured overlapped (submit kept it so only after one
// kernel node) has a programmatic one from it, the port a programmatic stream serialization
// gives on a GPU. Without edgeData, a query that would drop such an edge's type is lossy, as
// CUDA answers.
cudaError_t cudaGraphGetEdges(cudaGraph_t g, cudaGraphNode_t* from, cudaGraphNode_t* to, cudaGraphEdgeData* edge_data,
                              size_t* num_edges) {
  if (!g || !num_edges || (from == nullptr) != (to == nullptr) || (edge_data && !from))
    return set_error(cudaErrorInvalidValue);
  size_t count = 0;
  bool lossy = false;
  for (const auto& n : g->nodes)
    for (size_t d : n->node.deps) {
      const bool programmatic = n->node.kind == NodeKind::Kernel && n->node.kernel.overlapped;
      if (from && count < *num_edges) {
        from[count] = g->nodes[d].get();
        to[count] = n.get();
        if (edge_data) {
          edge_data[count] = cudaGraphEdgeData{};
          if (programmatic) {
            edge_data[count].type = cudaGraphDependencyTypeProgrammatic;
            edge_data[count].from_port = cudaGraphKernelNodePortProgrammatic;
          }
        } else {
          lossy |= programmatic;
        }
      }
      ++count;
    }
  if (from) {
    for (size_t i = count; i < *num_edges; ++i) from[i] = to[i] = nullptr;
    count = std::min(count, *num_edges);  // the edges written
  }
  *num_edges = count;
  return lossy ? set_error(cudaErrorLossyQuery) : cudaSuccess;
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
  std::mt19937_64 rng(simt::seed() * 0x9E3779B97F4A7C15ull + ++exec->launches);
  return submit_graph(exec->nodes, drawn_order(exec->nodes, rng), s);
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
