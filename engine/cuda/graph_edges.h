// A captured graph's edges by kind, for `grpo info --graph` and its tests: all of them, those
// from a kernel node to a kernel node, and of those the programmatic ones (into a kernel
// launched overlapped, core/launch.h, which may start while the kernel before it ends). One
// graph's own edges: a WHILE node's body is a graph of its own.
#pragma once
#include <cstddef>

#include <cuda_runtime.h>

namespace grpo {

struct GraphEdges {
  size_t edges = 0, kernel_edges = 0, programmatic = 0;
  GraphEdges& operator+=(const GraphEdges& o) {
    edges += o.edges, kernel_edges += o.kernel_edges, programmatic += o.programmatic;
    return *this;
  }
};

GraphEdges graph_edges(cudaGraph_t graph);

}  // namespace grpo
