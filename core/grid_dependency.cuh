// Programmatic dependent launch (sm_90), the device side of grpo::launch_overlapped
// (core/launch.h): a kernel launched that way may start while the kernel before it in its
// stream still runs, and must call wait_for_previous_kernel() before it reads anything that
// kernel writes, or writes anything it reads. release_next_kernel() lets the kernel after it
// start the same way; called only after the kernel's own wait, it keeps the rule simple: before
// its wait a kernel may read whatever the kernels before the previous one wrote (a library's
// kernel, cuBLAS's, keeps it too: it is launched the ordinary way, after everything before it
// finished). In a kernel
// launched the ordinary way the wait returns at once, and the release still lets an overlapped
// kernel after it start early: safe, since the ordinary kernel began after everything before it
// had finished. nvcc: griddepcontrol through the runtime's device functions (empty below sm_90,
// where launch_overlapped launches the ordinary way); SIMT: the emulator runs a stream's kernels
// one after another, so there is nothing to wait for, but its checks report an access before
// the wait to memory the kernel before wrote (or, for a write, read).
#pragma once

#if defined(__CUDACC__)
#define GRPO_GRID_DEPENDENCY_FN __device__ __forceinline__
namespace grpo {
GRPO_GRID_DEPENDENCY_FN void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}
GRPO_GRID_DEPENDENCY_FN void release_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
}  // namespace grpo
#elif defined(GRPO_SIMT)
#define GRPO_GRID_DEPENDENCY_FN inline
namespace grpo {
GRPO_GRID_DEPENDENCY_FN void wait_for_previous_kernel() { ::simt::detail::grid_dependency_wait(); }
GRPO_GRID_DEPENDENCY_FN void release_next_kernel() {}
}  // namespace grpo
#else
#error "core/grid_dependency.cuh is for .cu files: compile them with nvcc, or with g++ and simt/simt.h"
#endif

namespace grpo {
// The first statement of a kernel launched overlapped that has no setup to run early: its wait,
// then the release, so that the kernel after it is resident and waiting by the time this one
// ends (a graph otherwise starts it only then, ~1-3 us later on the H200). First, before any
// read and before any return: a kernel whose threads all returned without waiting could end
// before the kernel before it, and the one after it, which waits for this kernel alone, would
// read too early.
GRPO_GRID_DEPENDENCY_FN void follow_previous_kernel() {
  wait_for_previous_kernel();
  release_next_kernel();
}
}  // namespace grpo
#undef GRPO_GRID_DEPENDENCY_FN
