// Stream capture and CUDA graphs. While a stream captures, submit() (runtime.cpp) appends its
// work to the stream's graph as a linear chain of nodes; a kernel node owns the by-value copy of
// its arguments taken at launch, memcpy nodes keep pointers and copy at replay. Instantiation
// copies the nodes; a launch queues those copies like any other work.
#include <cuda_runtime.h>

#include <algorithm>

#include "simt/runtime_internal.h"

using namespace simt::detail;

namespace {
unsigned long long g_capture_ids = 0;
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
  if (!st || !graph) return set_error(cudaErrorInvalidValue);
  if (!st->capturing) return set_error(cudaErrorIllegalState);
  forget_capture(st->graph);
  st->capturing = false;
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

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  if (!g) return set_error(cudaErrorInvalidValue);
  delete g;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (!exec || !g) return set_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st;
  for (const auto& n : g->nodes) (*exec)->nodes.push_back(n->node);
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
  if (exec->nodes.size() != g->nodes.size()) return fail(cudaGraphExecUpdateErrorTopologyChanged, g->nodes.size());
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Node &old = exec->nodes[i], &now = g->nodes[i]->node;
    if (old.kind != now.kind) return fail(cudaGraphExecUpdateErrorNodeTypeChanged, i);
    if (old.func != now.func) return fail(cudaGraphExecUpdateErrorFunctionChanged, i);
  }
  for (size_t i = 0; i < g->nodes.size(); ++i) exec->nodes[i] = g->nodes[i]->node;
  if (info) *info = cudaGraphExecUpdateResultInfo{cudaGraphExecUpdateSuccess, nullptr, nullptr};
  return cudaSuccess;
}
