// The CUDA executor. Epoch 0 of a process (a warm-up: every cuBLAS shape is met once) runs
// eagerly; then the whole step plus the copy of the metrics ring into pinned memory is captured
// into one graph, and every later epoch is one cudaGraphLaunch (docs/notes/cuda-graphs.md). Nothing is
// captured before a warm-up epoch has run. With --no-graph every epoch runs eagerly, with an
// NVTX range per phase for Nsight Systems.
//
// All device work, state transfers included, goes to the executor's own stream. It is
// non-blocking, so it is not ordered after the legacy default stream: a synchronous cudaMemcpy
// from pageable memory may return before its data lands, and a cudaMemset is asynchronous.
#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#include "engine/cuda/gemm_tuning.h"
#include "engine/cuda/graph_edges.h"
#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_cluster.h"
#include "core/errors.h"
#include "engine/executor.h"
#include "engine/metrics_ring.h"
#include "engine/step.h"
#include "core/cuda_check.h"
#include "core/cuda_resources.h"

namespace grpo {

namespace {

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(const TrainConfig& c)
      : cfg_(c), layout_(c.hidden_size, c.obs_dim()), arena_bytes_(ArenaLayout(c).total) {
    // A tuning file that cannot hold is refused before anything is allocated.
    std::map<GemmShape, GemmAnswer> tuned;
    if (!c.gemm_tuning.empty()) tuned = read_gemm_tuning(c.gemm_tuning, this_gemm_device(), c.precision);
    // Refuse a configuration that cannot fit before allocating anything.
    const size_t slab_bytes = 4 * layout_.total * sizeof(float);
    const size_t need = slab_bytes + arena_bytes_ + (size_t(64) << 20);  // + cuBLAS workspace, slack
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    require_memory(need, free_bytes, "device");
    // The host holds the state copied out at each checkpoint and the file's bytes: seven slabs.
    if (const size_t host = available_host_bytes(); host > 0) require_memory(slab_bytes / 4 * 7, host, "host");
    stream_ = cuda::make_stream(cudaStreamNonBlocking);
    slabs_ = cuda::device_array<float>(slab_bytes / sizeof(float));
    arena_ = cuda::device_array<std::byte>(arena_bytes_);
    pinned_ring_ = cuda::pinned_array<TrainScalars>(kMetricsRing);
    CUDA_CHECK(cudaMemsetAsync(slabs_.get(), 0, slab_bytes, stream()));
    CUDA_CHECK(cudaMemsetAsync(arena_.get(), 0, arena_bytes_, stream()));
    std::memset(pinned_ring_.get(), 0, kMetricsRing * sizeof(TrainScalars));
    for (auto& e : events_) e = cuda::make_event(cudaEventDisableTiming);
    BlasOptions blas{c.precision};
    blas.answers = std::move(tuned);
    blas_ = std::make_unique<Blas>(blas);
    ops_ = std::make_unique<CudaOps>(c.game, c.batch_size, *blas_, stream());
    ops_->set_rollout_loop(c.rollout_loop);
    static_assert(TrainConfig::kMaxRolloutStreams == CudaOps::kMaxRolloutStreams);
    ops_->set_rollout_streams(c.rollout_streams);
    ops_->set_rollout_cluster(c.cluster_rollout(), c.rollout_cluster_mma);
    ops_->set_ranges(!c.use_graph);
    buffers_ = StepBuffers::over(slabs_.get(), arena_.get(), c);
  }

  // tune_gemm (engine/cuda/gemm_tuning.h): the products this executor's epochs have sent to
  // cuBLASLt, timed at other answers on their last operands.
  std::vector<Blas::RankTimes> time_gemm_ranks(int ranks, const std::vector<int>& splits, int repeats) {
    return blas_->time_ranks(ranks, repeats, stream(), splits);
  }

  std::string describe() const override {
    cudaDeviceProp p{};
    int dev = 0;
    std::string name = "?";
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess) name = p.name;
    return "cuda on " + name + (cfg_.use_graph ? " (one CUDA graph per epoch" : " (eager, --no-graph") +
           (cfg_.precision == Precision::Fp32 ? "" : std::string(", ") + precision_name(cfg_.precision)) +
           cluster_note() + streams_note() + ")";
  }

  // --rollout-streams as the run takes it: the games' ranges, or what runs the rollout instead.
  std::string streams_note() const {
    if (cfg_.rollout_streams <= 1) return "";
    if (cfg_.cluster_rollout() && cluster_refusal().empty())
      return ", --rollout-streams not taken: the cluster kernel runs the whole rollout";
    if (cfg_.rollout_loop && cfg_.use_graph && cfg_.max_steps >= 2 &&
        linear_forward_takes_few_rows(cfg_.games(), cfg_.hidden_size, cfg_.hidden_size,
                                      cfg_.precision == Precision::Tf32))
      return ", --rollout-streams not taken in the graph: the WHILE loop runs the rollout";
    return ", the rollout's games on " + std::to_string(std::min(cfg_.rollout_streams, cfg_.games())) + " streams";
  }

  // The cluster rollout (--cluster-rollout, --cluster-rollout-mma, or bf16's default) as the run
  // takes it: the kernel where the shape fits, else why not (named without a flag: the default
  // asks for it too).
  std::string cluster_note() const {
    if (!cfg_.cluster_rollout()) return "";
    const bool mma = cfg_.rollout_cluster_mma;
    const std::string why = cluster_refusal();
    if (why.empty()) return mma ? ", cluster rollout on tensor cores" : ", cluster rollout";
    return std::string(", ") + (mma ? "the cluster rollout on tensor cores" : "the cluster rollout") +
           " not taken: " + why;
  }

  // Why the cluster kernel cannot run this run's rollout, or "" where it can.
  std::string cluster_refusal() const {
    if (cfg_.precision == Precision::Tf32) return "TF32 products stay on cuBLASLt";
    if (!linear_forward_takes_few_rows(cfg_.games(), cfg_.hidden_size, cfg_.hidden_size, false))
      return std::to_string(cfg_.games()) + " games at hidden " + std::to_string(cfg_.hidden_size) + " (it takes 1-" +
             std::to_string(kFewRowsMax) + " games, hidden 32-" + std::to_string(kFewRowsMaxWidth) + ")";
    if (!rollout_cluster_fits(cfg_.games(), cfg_.hidden_size, cfg_.obs_dim(), cfg_.precision == Precision::Bf16,
                              cfg_.rollout_cluster_mma ? ClusterProduct::TensorCores : ClusterProduct::Fma))
      return "the device runs no clusters, or a block's share of fc1 does not fit its shared memory";
    return "";
  }

  bool on_device() const override { return true; }

  // On the executor's stream, so the next epoch's kernels are ordered after the copies; the
  // synchronisation keeps `s` (pageable) alive until they have landed.
  void set_state(const RunState& s) override {
    if (s.slabs.size() != 4 * layout_.total)
      throw std::invalid_argument("set_state: " + std::to_string(s.slabs.size()) + " slab floats for a layout of " +
                                  std::to_string(4 * layout_.total));
    CUDA_CHECK(cudaMemcpyAsync(slabs_.get(), s.slabs.data(), s.slabs.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream()));
    CUDA_CHECK(cudaMemcpyAsync(buffers_.scalars, &s.scalars, sizeof s.scalars, cudaMemcpyHostToDevice, stream()));
    refresh_weight_copies(*ops_, buffers_.p, cfg_.hidden_size, cfg_.obs_dim());  // an epoch only keeps them
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    next_epoch_ = s.scalars.epoch;
  }

  RunState get_state() override {
    RunState s;
    s.slabs.resize(4 * layout_.total);
    CUDA_CHECK(cudaMemcpyAsync(s.slabs.data(), slabs_.get(), s.slabs.size() * sizeof(float), cudaMemcpyDeviceToHost,
                               stream()));
    CUDA_CHECK(cudaMemcpyAsync(&s.scalars, buffers_.scalars, sizeof s.scalars, cudaMemcpyDeviceToHost, stream()));
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    return s;
  }

  RunState best_state() override {
    const size_t n = layout_.total;
    RunState s;
    s.slabs.assign(4 * n, 0.f);
    CUDA_CHECK(cudaMemcpyAsync(s.slabs.data(), buffers_.best, n * sizeof(float), cudaMemcpyDeviceToHost, stream()));
    CUDA_CHECK(cudaMemcpyAsync(s.slabs.data() + 2 * n, buffers_.best + n, 2 * n * sizeof(float), cudaMemcpyDeviceToHost,
                               stream()));
    CUDA_CHECK(cudaMemcpyAsync(&s.scalars, buffers_.best_scalars, sizeof s.scalars, cudaMemcpyDeviceToHost, stream()));
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    return s;
  }

  void launch_epoch() override {
    const uint32_t slot = launched_ % kMetricsRing;
    if (!cfg_.use_graph || !warmed_up_) {
      enqueue_epoch();
      warmed_up_ = true;
    } else {
      if (!exec_) capture();
      nvtxRangePushA("epoch graph");
      CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream()));
      nvtxRangePop();
    }
    CUDA_CHECK(cudaEventRecord(events_[slot].get(), stream()));
    event_epoch_[slot] = next_epoch_++;
    ++launched_;
  }

  TrainScalars wait_metrics(uint32_t epoch) override {
    // One event per launch, cycling with the ring; the trainer has at most two epochs in flight.
    int ev = -1;
    for (int i = 0; i < kMetricsRing; ++i)
      if (events_[i] && event_epoch_[i] == epoch && uint64_t(i) < launched_) ev = i;
    if (ev < 0) throw CudaError("wait_metrics: epoch " + std::to_string(epoch) + " was not launched recently");
    CUDA_CHECK(cudaEventSynchronize(events_[ev].get()));
    const uint32_t slot = epoch % kMetricsRing;
    TrainScalars m;
    std::memcpy(&m, &pinned_ring_[slot], sizeof m);
    if (m.epoch != epoch)
      throw CudaError("metrics ring out of step: wanted epoch " + std::to_string(epoch) + ", slot holds " +
                      std::to_string(m.epoch));
    return m;
  }

  // Without a warm-up yet, runs one epoch eagerly first and then restores the state, so the
  // run is where it was and the next launch_epoch replays the graph.
  GraphSize capture_graph() override {
    if (!cfg_.use_graph) return {};
    if (!warmed_up_) {
      const RunState s = get_state();
      enqueue_epoch();
      warmed_up_ = true;
      set_state(s);
    }
    if (!exec_) capture();
    size_t top = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph_.get(), nullptr, &top));
    std::vector<cudaGraphNode_t> nodes(top);
    CUDA_CHECK(cudaGraphGetNodes(graph_.get(), nodes.data(), &top));
    const CudaOps::LoopNodes loops = ops_->loop_nodes();
    GraphSize size{top + loops.nodes, top + loops.runs};
    const auto type_of = [](cudaGraphNode_t n) {
      cudaGraphNodeType type{};
      CUDA_CHECK(cudaGraphNodeGetType(n, &type));
      return type;
    };
    for (cudaGraphNode_t n : nodes) {
      const cudaGraphNodeType type = type_of(n);
      ++(type == cudaGraphNodeTypeKernel        ? size.kernels
         : type == cudaGraphNodeTypeMemset      ? size.memsets
         : type == cudaGraphNodeTypeMemcpy      ? size.memcpys
         : type == cudaGraphNodeTypeConditional ? size.conditionals
                                                : size.other);
    }
    GraphEdges edges = graph_edges(graph_.get());
    edges += loops.edges;
    size.edges = edges.edges, size.kernel_edges = edges.kernel_edges, size.programmatic = edges.programmatic;
    size.into_library = edges.into_library, size.programmatic_into_library = edges.programmatic_into_library;
    return size;
  }

 private:
  void capture() {
    // cuBLAS sets each GEMM shape up on its first call, which a capture cannot record.
    if (!warmed_up_) throw CudaError("capture before a warm-up epoch has met every cuBLAS shape eagerly");
    ops_->reset_loop_nodes();
    CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeGlobal));
    cudaGraph_t g = nullptr;
    try {
      enqueue_epoch();
    } catch (...) {  // end the capture, or the stream stays unusable
      if (cudaStreamEndCapture(stream(), &g) == cudaSuccess) graph_.reset(g);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream(), &g));
    graph_.reset(g);
    cudaGraphExec_t e = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    exec_.reset(e);
  }

  void enqueue_epoch() {
    training_step(*ops_, buffers_, cfg_);
    // The last node: the metrics ring to pinned memory, read by the host an epoch later.
    CUDA_CHECK(cudaMemcpyAsync(pinned_ring_.get(), buffers_.ring, kMetricsRing * sizeof(TrainScalars),
                               cudaMemcpyDeviceToHost, stream()));
  }

  TrainConfig cfg_;
  ParamLayout layout_;
  size_t arena_bytes_;
  cudaStream_t stream() const { return stream_.get(); }

  // Released in reverse order: the graph before the stream and memory it uses.
  cuda::Stream stream_;
  cuda::DeviceArray<float> slabs_;
  cuda::DeviceArray<std::byte> arena_;
  cuda::PinnedArray<TrainScalars> pinned_ring_;
  cuda::Event events_[kMetricsRing];
  std::unique_ptr<Blas> blas_;
  std::unique_ptr<CudaOps> ops_;
  cuda::Graph graph_;
  cuda::GraphExec exec_;
  StepBuffers buffers_{};
  uint32_t event_epoch_[kMetricsRing] = {};  // the epoch each event's launch ran
  uint64_t launched_ = 0;
  bool warmed_up_ = false;   // an epoch has run eagerly (capturing is allowed from then on)
  uint32_t next_epoch_ = 0;  // host mirror of the device epoch counter, for naming launches
};

}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const TrainConfig& c) { return std::make_unique<CudaExecutor>(c); }

std::string tune_gemm(const TrainConfig& c, int ranks, const std::vector<int>& splits, int repeats, double min_gain,
                      const std::function<void()>& started) {
  TrainConfig e = c;
  e.backend = Backend::Cuda;
  e.use_graph = false;    // one eager epoch meets every product
  e.gemm_tuning.clear();  // timed from the heuristic's first answers, whatever the run would take
  CudaExecutor ex(e);
  started();
  ex.set_state(initial_state(e));
  ex.launch_epoch();
  ex.wait_metrics(0);
  return gemm_tuning_json(this_gemm_device(), e.precision, ex.time_gemm_ranks(ranks, splits, repeats), min_gain);
}

}  // namespace grpo
