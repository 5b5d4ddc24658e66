// An executor owns the memory of a run and runs epochs: HostExecutor on the CPU (the reference),
// CudaExecutor on a GPU (eagerly, or one captured CUDA graph replayed per epoch). The trainer
// drives both the same way: launch epoch e, then wait for epoch e-1's metrics while e runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/layout.h"
#include "engine/train_config.h"
#include "kernels/train_scalars.h"

namespace grpo {

// What a checkpoint holds and a resume restores: the four slabs and the scalars.
struct RunState {
  std::vector<float> slabs;  // params, grads, adam m, adam v: 4 * ParamLayout::total floats
  TrainScalars scalars{};
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string describe() const = 0;
  virtual bool on_device() const { return false; }  // runs on a CUDA device (or the emulator)
  // Synchronous state transfer: at setup, for checkpoints, never inside an epoch.
  virtual void set_state(const RunState& s) = 0;
  virtual RunState get_state() = 0;
  // The state that played the best-scoring epoch so far (kernels/best_snapshot.h): params, zero
  // gradients, m, v and the scalars at the start of that epoch, with its score as best_score.
  // Synchronous like get_state. Meaningless before an epoch has run.
  virtual RunState best_state() = 0;
  // Enqueues the next epoch (the one named by the scalars' epoch counter); may return at once.
  virtual void launch_epoch() = 0;
  // Blocks until epoch `epoch` has finished and returns its metrics snapshot.
  virtual TrainScalars wait_metrics(uint32_t epoch) = 0;
  // The epoch graph's size: nodes, each node of a loop's body counted once, and node runs per
  // replay (a body's nodes once per trip).
  struct GraphSize {
    size_t nodes = 0, runs = 0;
    // The top level's nodes by kind (a loop body's are in `nodes` only): kernels, memsets, copies,
    // conditional nodes (WHILE), and anything else (host, event, empty, child graph).
    size_t kernels = 0, memsets = 0, memcpys = 0, conditionals = 0, other = 0;
    // The edges, the top level's and a loop body's; those from a kernel node to a kernel node;
    // and of those the programmatic ones, into a kernel launched overlapped (core/launch.h), which
    // may start while the kernel before it ends; and of the kernel-to-kernel ones, those into a
    // library's kernel (cuBLAS's on a GPU: never programmatic, the library launches them), and
    // any of those that is programmatic (none, unless a kernel of ours was taken for a library's).
    size_t edges = 0, kernel_edges = 0, programmatic = 0, into_library = 0, programmatic_into_library = 0;
  };
  // Captures the epoch graph now if it was not yet and returns its size; zeros for executors
  // without a graph. Before any epoch has run, it first runs one eagerly (every cuBLAS shape is
  // then met outside the capture) and restores the state, so the run is where it was.
  virtual GraphSize capture_graph() { return {}; }
};

// Throws UsageError, naming the sizes and the flags that shrink them, when a configuration
// needs more than `available` bytes of `where` ("host", "device") memory; the executors call it
// before allocating anything.
void require_memory(size_t need, size_t available, const char* where);
// Bytes a new host allocation can get without swapping (MemAvailable, else the physical memory),
// no more than the process's address-space limit (ulimit -v) allows; 0 when none is known.
size_t available_host_bytes();

std::unique_ptr<Executor> make_host_executor(const TrainConfig& c);
#if defined(GRPO_HAVE_CUDA)
std::unique_ptr<Executor> make_cuda_executor(const TrainConfig& c);
#endif

// Whether a CUDA device answers; if not, *why says what happened.
bool cuda_device_available(std::string* why);

// Picks the executor for c.backend (auto: cuda when a real GPU answers, else host with a notice
// on stderr). Throws UsageError for --backend cuda without a device.
std::unique_ptr<Executor> make_executor(const TrainConfig& c, bool quiet = false);

// A fresh run's state: initial parameters from the seed, zero gradients and moments.
RunState initial_state(const TrainConfig& c);

}  // namespace grpo
