#include "engine/cuda/graph_edges.h"

#include <cstring>
#include <vector>

#include "core/cuda_check.h"

namespace grpo {

namespace {

bool is_kernel(cudaGraphNode_t n) {
  cudaGraphNodeType type{};
  CUDA_CHECK(cudaGraphNodeGetType(n, &type));
  return type == cudaGraphNodeTypeKernel;
}

// Whether kernel node n runs a library's kernel: one this program's runtime cannot name (a
// library that links its own runtime, or launches through the driver), or one named outside
// namespace grpo. Every kernel of ours is in it. The emulator's graphs hold none.
bool is_library_kernel(cudaGraphNode_t n) {
#if GRPO_GPU
  cudaKernelNodeParams p{};
  const char* name = nullptr;
  if (cudaGraphKernelNodeGetParams(n, &p) != cudaSuccess || cudaFuncGetName(&name, p.func) != cudaSuccess ||
      name == nullptr) {
    (void)cudaGetLastError();  // the refusal answers the question; it is no error of the run
    return true;
  }
  return std::strstr(name, "grpo") == nullptr;
#else
  (void)n;
  return false;
#endif
}

}  // namespace

GraphEdges graph_edges(cudaGraph_t graph) {
  GraphEdges e;
  CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &e.edges));
  std::vector<cudaGraphNode_t> from(e.edges), to(e.edges);
  std::vector<cudaGraphEdgeData> data(e.edges);
  // With the edges' data: without it CUDA refuses a graph that has programmatic edges.
  CUDA_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &e.edges));
  for (size_t i = 0; i < e.edges; ++i) {
    const bool programmatic = data[i].type == cudaGraphDependencyTypeProgrammatic;
    e.programmatic += programmatic;
    if (!is_kernel(from[i]) || !is_kernel(to[i])) continue;
    ++e.kernel_edges;
    if (is_library_kernel(to[i])) {
      ++e.into_library;
      e.programmatic_into_library += programmatic;
    }
  }
  return e;
}

}  // namespace grpo
