#include "engine/cuda/graph_edges.h"

#include <vector>

#include "core/cuda_check.h"

namespace grpo {

GraphEdges graph_edges(cudaGraph_t graph) {
  const auto is_kernel = [](cudaGraphNode_t n) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(n, &type));
    return type == cudaGraphNodeTypeKernel;
  };
  GraphEdges e;
  CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e.edges));
  std::vector<cudaGraphNode_t> from(e.edges), to(e.edges);
  std::vector<cudaGraphEdgeData> data(e.edges);
  // With the edges' data: without it CUDA refuses a graph that has programmatic edges.
  CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &e.edges));
  for (size_t i = 0; i < e.edges; ++i) {
    e.kernel_edges += is_kernel(from[i]) && is_kernel(to[i]);
    e.programmatic += data[i].type == cudaGraphDependencyTypeProgrammatic;
  }
  return e;
}

}  // namespace grpo
