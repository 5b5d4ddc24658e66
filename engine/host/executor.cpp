#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "engine/executor.h"
#include "engine/host/ops.h"
#include "engine/metrics_ring.h"
#include "engine/step.h"

namespace grpo {

namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

void* aligned_zeroed(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return p;
}

// Refuses, before allocating anything, a configuration that cannot fit: the four slabs and the
// arena, and at each checkpoint the state copied out (four slabs more) and the file's bytes (three).
const TrainConfig& fits_in_host_memory(const TrainConfig& c) {
  const size_t slab = ParamLayout(c.hidden_size, c.obs_dim()).total * sizeof(float);
  const size_t need = 4 * slab + ArenaLayout(c).total + 4 * slab + 3 * slab;
  const size_t have = available_host_bytes();
  if (have > 0) require_memory(need, have, "host");
  return c;
}

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(const TrainConfig& c)
      : cfg_(fits_in_host_memory(c)),
        layout_(c.hidden_size, c.obs_dim()),
        slabs_(static_cast<float*>(aligned_zeroed(4 * layout_.total * sizeof(float)))),
        arena_(aligned_zeroed(ArenaLayout(c).total)),
        ops_(c.game, c.batch_size),
        buffers_(StepBuffers::over(slabs_.get(), arena_.get(), c)) {}

  std::string describe() const override {
    return cfg_.precision == Precision::Bf16   ? "host (CPU reference executor, bf16 products: the twins in turn)"
           : cfg_.precision == Precision::Tf32 ? "host (CPU reference executor; tf32 is the CUDA executor's, fp32 here)"
                                               : "host (CPU reference executor)";
  }

  void set_state(const RunState& s) override {
    std::memcpy(slabs_.get(), s.slabs.data(), 4 * layout_.total * sizeof(float));
    *buffers_.scalars = s.scalars;
    refresh_weight_copies(ops_, buffers_.p, cfg_.hidden_size, cfg_.obs_dim());  // an epoch only keeps them
  }
  RunState get_state() override {
    RunState s;
    s.slabs.assign(slabs_.get(), slabs_.get() + 4 * layout_.total);
    s.scalars = *buffers_.scalars;
    return s;
  }
  RunState best_state() override {
    const size_t n = layout_.total;
    RunState s;
    s.slabs.assign(4 * n, 0.f);
    std::memcpy(s.slabs.data(), buffers_.best, n * sizeof(float));
    std::memcpy(s.slabs.data() + 2 * n, buffers_.best + n, 2 * n * sizeof(float));
    s.scalars = *buffers_.best_scalars;
    return s;
  }
  void launch_epoch() override { training_step(ops_, buffers_, cfg_); }
  TrainScalars wait_metrics(uint32_t epoch) override { return buffers_.ring[epoch % kMetricsRing]; }

 private:
  TrainConfig cfg_;
  ParamLayout layout_;
  std::unique_ptr<float, FreeDeleter> slabs_;
  std::unique_ptr<void, FreeDeleter> arena_;
  HostOps ops_;
  StepBuffers buffers_;
};

}  // namespace

std::unique_ptr<Executor> make_host_executor(const TrainConfig& c) { return std::make_unique<HostExecutor>(c); }

}  // namespace grpo
