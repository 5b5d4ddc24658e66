// CudaOps::rollout on several streams (engine/cuda/ops.h, set_rollout_streams): the games split
// into ranges, each range's product with fc1 and fused step on a stream of its own. A step's two
// kernels depend on each other (the product reads the h1 rows the step before wrote, the step
// the product's a1), so one stream leaves the GPU to one of them at a time; the reference's
// cuBLASLt product fills few of the SMs and the fused step waits on its own latencies. Ranges are
// independent until the loss pass, so their chains overlap.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/cuda_check.h"
#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_step.h"
#include "engine/policy.h"
#include "kernels/matmul.h"

namespace grpo {

void CudaOps::set_rollout_streams(int k) {
  if (k < 1 || k > kMaxRolloutStreams)
    throw std::invalid_argument("rollout streams: " + std::to_string(k) + " is outside [1, " +
                                std::to_string(kMaxRolloutStreams) + "]");
  rollout_streams_ = k;
}

void CudaOps::rollout_on_streams(const Rollout& r) {
  const int k = std::min(rollout_streams_, r.N);
  if (k <= 1) return Ops::rollout(r);
  rollout_start(r);
  const auto stream_of = [&](int c) { return c == 0 ? stream_ : side_streams_[size_t(c - 1)].get(); };
  CUDA_CHECK(cudaEventRecord(side_events_[0].get(), stream_));
  for (int c = 1; c < k; ++c) CUDA_CHECK(cudaStreamWaitEvent(stream_of(c), side_events_[0].get(), 0));
  // Every side stream joins stream_ back, also when a launch throws: a capture ends only joined.
  const auto join = [&] {
    for (int c = 1; c < k; ++c) {
      CUDA_CHECK(cudaEventRecord(side_events_[size_t(c)].get(), stream_of(c)));
      CUDA_CHECK(cudaStreamWaitEvent(stream_, side_events_[size_t(c)].get(), 0));
    }
  };
  try {
    for (int t = 0; t < r.T; ++t) {
      const RolloutStep s = rollout_step_at(r, t);
      for (int c = 0; c < k; ++c) {
        const int first = int(int64_t(c) * r.N / k), count = int(int64_t(c + 1) * r.N / k) - first;
        const size_t row = size_t(first) * size_t(r.H);
        cudaStream_t st = stream_of(c);
        if (r.p.fc1_w_bf16)
          linear_forward_bf16_cuda(blas_, s.now.h1_bf16 + row, r.p.fc1_w_bf16, nullptr, s.now.a1 + row, count, r.H, r.H,
                                   st);
        else
          linear_forward_cuda(blas_, s.now.h1 + row, r.p.fc1_w, nullptr, s.now.a1 + row, count, r.H, r.H, st);
        rollout_step_cuda(game_, s, st, GameRange{first, count});
      }
    }
  } catch (...) {
    try {
      join();
    } catch (...) {  // the first error is the one to report
    }
    throw;
  }
  join();
}

}  // namespace grpo
