// Shared by the rollout tests that compare whole arenas (test_rollout_loop_cuda.cpp,
// test_rollout_cluster_cuda.cpp, test_rollout_streams_cuda.cpp): one rollout from an arena image and parameter slabs on
// CudaOps, eagerly or captured and replayed, and the arena it leaves behind.
#pragma once
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "core/cuda_resources.h"
#include "engine/cuda/ops.h"
#include "engine/step.h"
#include "tests/engine/engine_test_util.h"
#include "tests/test_util.h"

namespace grpo::test {

// How the rollout runs on `ops` (the default: CudaOps::rollout as configured).
using RolloutRun = std::function<void(CudaOps& ops, const Ops::Rollout& r, cudaStream_t stream)>;

struct Outcome {
  std::vector<char> arena;
  size_t top_nodes = 0;  // nodes of the captured graph outside the loop's body
  CudaOps::LoopNodes loop;
};

// Runs one rollout from the arena image `image` and the parameter slabs `slabs`: eagerly, or
// (after an eager warm-up that meets every cuBLAS shape) captured and replayed `replays` times,
// the arena re-uploaded from the image before each replay. keep_h0: Ops::Rollout's. each_replay,
// if given, receives the arena after every replay (the emulator draws each replay's node order).
inline Outcome run_rollout(const TrainConfig& c, const std::vector<char>& image, const std::vector<float>& slabs,
                           bool captured, int replays = 1, const RolloutRun& run = nullptr, bool keep_h0 = true,
                           std::vector<std::vector<char>>* each_replay = nullptr) {
  DeviceBuffer<float> dev_slabs(slabs);
  DeviceBuffer<char> arena(image);
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads ride the legacy stream
  Blas blas(BlasOptions{c.precision});
  cuda::Stream stream = cuda::make_stream(cudaStreamNonBlocking);
  CudaOps ops(c.game, c.batch_size, blas, stream.get());
  ops.set_rollout_loop(c.rollout_loop);
  ops.set_rollout_streams(c.rollout_streams);
  ops.set_rollout_cluster(c.cluster_rollout(), c.rollout_cluster_mma);
  const auto roll = [&](const Ops::Rollout& r) { run ? run(ops, r, stream.get()) : ops.rollout(r); };
  const StepBuffers b = StepBuffers::over(dev_slabs.get(), arena.get(), c);
  const int N = c.games(), H = c.hidden_size;
  refresh_weight_copies(ops, b.p, H, c.obs_dim());
  const Ops::Rollout r{b.p,       b.acts,      b.obs, b.actions,   b.rewards, b.games, c.seed, &b.scalars->epoch,
                       c.dropout, c.max_steps, N,     c.obs_dim(), H,         keep_h0};
  roll(r);
  Outcome out;
  if (captured) {
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
    roll(r);
    CUDA_CHECK(cudaStreamEndCapture(stream.get(), &g));
    cuda::Graph graph(g);
    CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &out.top_nodes));
    out.loop = ops.loop_nodes();
    cudaGraphExec_t e = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    cuda::GraphExec exec(e);
    for (int i = 0; i < replays; ++i) {
      CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      arena.upload(image);
      CUDA_CHECK(cudaDeviceSynchronize());
      refresh_weight_copies(ops, b.p, H, c.obs_dim());
      CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.get()));
      if (each_replay) {
        CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        each_replay->emplace_back(image.size());
        CUDA_CHECK(cudaMemcpy(each_replay->back().data(), arena.get(), image.size(), cudaMemcpyDeviceToHost));
      }
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  out.arena.resize(image.size());
  CUDA_CHECK(cudaMemcpy(out.arena.data(), arena.get(), image.size(), cudaMemcpyDeviceToHost));
  return out;
}

// The parameter slabs: random parameters, the gradients and moments poisoned.
inline std::vector<float> random_slabs(const TrainConfig& c, uint64_t seed) {
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  std::vector<float> slabs(4 * pl.total, poison_value());
  const auto w = random_floats(pl.total, seed, -0.3f, 0.3f);
  std::copy(w.begin(), w.end(), slabs.begin());
  return slabs;
}

// The arena: NaN in every float, but the epoch counter.
inline std::vector<char> poisoned_arena(const TrainConfig& c, uint32_t epoch) {
  const ArenaLayout al(c);
  std::vector<char> image(al.total, char(0xFF));
  std::memcpy(image.data() + al.scalars + offsetof(TrainScalars, epoch), &epoch, sizeof epoch);
  return image;
}

// The arena of a rollout run with Rollout::keep_h0 false (`without`) against the same run with
// it true (`full`): the same bytes everywhere but the h0 rows, which keep the image's poison
// (CudaOps::rollout_start honours keep_h0 for step 0's rows too).
inline void expect_same_without_h0(const TrainConfig& c, const std::vector<char>& full,
                                   const std::vector<char>& without, const char* what) {
  const ArenaLayout al(c);
  const size_t row = size_t(c.hidden_size) * sizeof(float);
  const size_t begin = al.h0, end = al.h0 + size_t(c.samples()) * row;
  ASSERT_EQ(full.size(), without.size());
  EXPECT_EQ(std::memcmp(full.data(), without.data(), begin), 0) << what << ": the bytes before h0's rows";
  EXPECT_EQ(std::memcmp(full.data() + end, without.data() + end, full.size() - end), 0)
      << what << ": the bytes after h0";
  for (size_t o = begin; o < end; o += sizeof(float)) {
    float x;
    std::memcpy(&x, without.data() + o, sizeof x);
    ASSERT_TRUE(std::isnan(x)) << what << ": h0 written at arena byte " << o;
  }
}

// The first byte where two arenas differ, or their size when none does.
inline size_t first_difference(const std::vector<char>& a, const std::vector<char>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size();
}

}  // namespace grpo::test
