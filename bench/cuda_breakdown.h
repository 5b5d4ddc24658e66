// A per-op breakdown of one CUDA epoch, eager: each op between two events on the executor's
// stream, read after the epoch's sync. An interval holds the op's kernels and any time the GPU
// spent waiting for them to be launched, so where launches set the pace (small shapes) the rows
// show launch cost as much as kernel time; their sum against the graph's epoch time says how
// much of an eager epoch is waiting. Built the way engine/cuda/executor_cuda.cpp builds its ops.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "bench/timed_ops.h"
#include "engine/cuda/ops.h"
#include "engine/executor.h"
#include "engine/layout.h"
#include "engine/step.h"
#include "engine/train_config.h"
#include "core/cuda_check.h"
#include "core/cuda_resources.h"
#include "kernels/matmul.h"

namespace grpo::bench {

class EventClock final : public OpClock {
 public:
  explicit EventClock(cudaStream_t s) : stream_(s) {}
  size_t start() override {
    const size_t i = next_++;
    if (i == events_.size()) events_.push_back(cuda::make_event(cudaEventDefault));
    CUDA_CHECK(cudaEventRecord(events_[i].get(), stream_));
    return i;
  }
  void stop(size_t token, OpTime& row) override {
    const size_t i = next_++;
    if (i == events_.size()) events_.push_back(cuda::make_event(cudaEventDefault));
    CUDA_CHECK(cudaEventRecord(events_[i].get(), stream_));
    pending_.push_back({token, i, &row});
  }
  // Waits for the stream and adds every interval recorded since the last flush to its row.
  void flush() {
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (const Pending& p : pending_) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, events_[p.begin].get(), events_[p.end].get()));
      p.row->seconds += ms * 1e-3;
    }
    pending_.clear();
    next_ = 0;
  }

 private:
  struct Pending {
    size_t begin, end;
    OpTime* row;
  };
  cudaStream_t stream_;
  std::vector<cuda::Event> events_;
  std::vector<Pending> pending_;
  size_t next_ = 0;
};

// Seconds per epoch of each op (averaged over `repeats` epochs after `warmup` untimed ones).
inline std::map<std::string, OpTime> cuda_breakdown(const TrainConfig& c, int warmup, int repeats) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
  auto slabs = cuda::device_array<float>(4 * pl.total);
  auto arena = cuda::device_array<std::byte>(al.total);
  const RunState s = initial_state(c);
  CUDA_CHECK(cudaMemsetAsync(arena.get(), 0, al.total, stream.get()));
  CUDA_CHECK(cudaMemcpyAsync(slabs.get(), s.slabs.data(), s.slabs.size() * sizeof(float), cudaMemcpyHostToDevice,
                             stream.get()));
  const StepBuffers b = StepBuffers::over(slabs.get(), arena.get(), c);
  CUDA_CHECK(cudaMemcpyAsync(b.scalars, &s.scalars, sizeof s.scalars, cudaMemcpyHostToDevice, stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  Blas blas(BlasOptions{c.precision});
  CudaOps ops(c.game, c.batch_size, blas, stream.get());
  refresh_weight_copies(ops, b.p, c.hidden_size, c.obs_dim());  // as an executor's set_state does
  for (int i = 0; i < warmup; ++i) training_step(ops, b, c);
  EventClock clock(stream.get());
  TimedOps timed(ops, clock, /*whole_composites=*/false);
  for (int i = 0; i < repeats; ++i) {
    training_step(timed, b, c);
    clock.flush();
  }
  for (auto& [name, t] : timed.times) t.seconds /= repeats, t.calls /= repeats;
  return timed.times;
}

}  // namespace grpo::bench
