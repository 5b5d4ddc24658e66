// A captured graph's edges by kind, for `grpo info --graph` and its tests: all of them, those
// from a kernel node to a kernel node, and of those the programmatic ones (into a kernel
// launched overlapped, core/launch.h, which may start while the kernel before it ends) and those
// into a library's kernel (cuBLAS's products on a GPU, which the library launches: never
// programmatic; on the emulator the products are host nodes). One graph's own edges: a WHILE
// node's body is a graph of its own.
#pragma once
#include <cstddef>

#include <cuda_runtime.h>

namespace grpo {

struct GraphEdges {
  size_t edges = 0, kernel_edges = 0, programmatic = 0;
  // Kernel-to-kernel edges into a kernel outside namespace grpo; of those, the programmatic ones
  // (none, unless a kernel of ours was taken for a library's).
  size_t into_library = 0, programmatic_into_library = 0;
  GraphEdges& operator+=(const GraphEdges& o) {
    edges += o.edges, kernel_edges += o.kernel_edges, programmatic += o.programmatic;
    into_library += o.into_library, programmatic_into_library += o.programmatic_into_library;
    return *this;
  }
};

GraphEdges graph_edges(cudaGraph_t graph);

}  // namespace grpo
