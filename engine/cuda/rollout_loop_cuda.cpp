// CudaOps::rollout (engine/cuda/ops.h): the rollout as one cluster kernel when asked
// (rollout_cluster.h), else its steps as one WHILE graph node. The small preset's 200 steps are
// otherwise 400 of an epoch graph's nodes; as a loop they are 3 and a body of
// kRolloutLoopStepsPerTrip steps, and the device runs the same kernels with the same arguments,
// the step read from a counter instead of baked into each node, so the results are the default's
// bit for bit.
#include "core/cuda_check.h"
#include "engine/cuda/graph_edges.h"
#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_step.h"
#include "engine/policy.h"
#include "kernels/matmul.h"

namespace grpo {

namespace {

// A WHILE node after what `stream` has captured so far, whose condition starts each replay at 1;
// returns the node and its body graph, and makes the node the stream's next dependency.
struct WhileNode {
  cudaGraphNode_t node;
  cudaGraph_t body;
  cudaGraphConditionalHandle cond;
};
WhileNode add_while_node(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t num_deps = 0;
  CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &num_deps));
  WhileNode w{};
  CUDA_CHECK(cudaGraphConditionalHandleCreate(&w.cond, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = w.cond;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  CUDA_CHECK(cudaGraphAddNode(&w.node, graph, deps, nullptr, num_deps, &params));
  w.body = params.conditional.phGraph_out[0];
  CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream, &w.node, nullptr, 1, cudaStreamSetCaptureDependencies));
  return w;
}

}  // namespace

void CudaOps::rollout(const Rollout& r) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
  const bool bf16 = r.p.fc1_w_bf16 != nullptr;
  const bool few_rows = linear_forward_takes_few_rows(r.N, r.H, r.H, !bf16 && blas_.tf32());
  const ClusterProduct product = cluster_mma_ && bf16 ? ClusterProduct::TensorCores : ClusterProduct::Fma;
  if (rollout_cluster_ && few_rows &&
      rollout_cluster_fits(r.N, r.H, r.D, bf16, product)) {  // eagerly and captured alike
    rollout_start(r);
    rollout_cluster_cuda(game_, rollout_step_at(r, 0), r.T, stream_, product, 0, rollout_clocks_, cluster_wait_);
    return;
  }
  if (!rollout_loop_ || status != cudaStreamCaptureStatusActive || !few_rows || r.T < 2)
    return rollout_on_streams(r);  // on one stream, Ops::rollout

  rollout_start(r);
  zero(loop_counters_.get(), 2 * sizeof(uint32_t));
  const WhileNode w = add_while_node(stream_);
  // The body: steps 0 .. T-2 (each writes the next step's trunk), on step 0's pointers,
  // kRolloutLoopStepsPerTrip a trip; those of the last trip past T-2 do nothing.
  const RolloutStep first = rollout_step_at(r, 0);
  const RolloutLoop loop{loop_counters_.get(), w.cond, uint32_t(r.T - 1)};
  const size_t trips = (size_t(loop.steps) + kRolloutLoopStepsPerTrip - 1) / kRolloutLoopStepsPerTrip;
  cudaStream_t body = body_stream_.get();
  CUDA_CHECK(cudaStreamBeginCaptureToGraph(body, w.body, nullptr, nullptr, 0, cudaStreamCaptureModeRelaxed));
  try {
    for (uint32_t i = 0; i < kRolloutLoopStepsPerTrip; ++i) {
      if (bf16)
        linear_forward_few_rows_stepped_bf16_cuda(first.now.h1_bf16, r.p.fc1_w_bf16, first.now.a1, r.N, r.H, r.H,
                                                  loop.counters, loop.steps, body);
      else
        linear_forward_few_rows_stepped_cuda(first.now.h1, r.p.fc1_w, first.now.a1, r.N, r.H, r.H, loop.counters,
                                             loop.steps, body);
      rollout_step_looped_cuda(game_, first, loop, body);
    }
  } catch (...) {  // end the body's capture, or its stream stays unusable
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(body, &g);
    throw;
  }
  cudaGraph_t captured = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(body, &captured));
  size_t body_nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(w.body, nullptr, &body_nodes));
  loop_nodes_.nodes += body_nodes;
  loop_nodes_.runs += body_nodes * trips;
  loop_nodes_.edges += graph_edges(w.body);

  // The last step, as the default runs it: no next trunk.
  const RolloutStep last = rollout_step_at(r, r.T - 1);
  fc1_forward(*this, r.p, last.now, r.N, r.H);
  rollout_step(last);
}

}  // namespace grpo
