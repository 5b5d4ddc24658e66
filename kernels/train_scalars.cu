// The one-thread kernels that advance the device-resident scalars (kernels/train_scalars.h):
// one thread, so the Adam step, epoch and learning rate have a single writer.
#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/train_scalars.h"

namespace grpo {

__global__ void advance_schedule_kernel(TrainScalars* s) {
  follow_previous_kernel();
  if (threadIdx.x == 0 && blockIdx.x == 0) advance_schedule_one(s);
}

__global__ void finish_update_kernel(TrainScalars* s) {
  follow_previous_kernel();
  if (threadIdx.x == 0 && blockIdx.x == 0) finish_update_one(s);
}

void finish_update_cuda(TrainScalars* s, cudaStream_t stream) {
  launch_overlapped(finish_update_kernel, dim3(1), dim3(1), 0, stream, s);
}

void advance_schedule_cuda(TrainScalars* s, cudaStream_t stream) {
  launch_overlapped(advance_schedule_kernel, dim3(1), dim3(1), 0, stream, s);
}

}  // namespace grpo
