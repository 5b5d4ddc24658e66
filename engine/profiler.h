// cudaProfilerStart/Stop for `grpo train --profile-epochs A:B` (nsys --capture-range=cudaProfilerApi,
// tools/profile_nsys). Only in flavours with CUDA; the SIMT emulator has no profiler: no-ops there.
#pragma once

namespace grpo {

#if defined(GRPO_HAVE_CUDA)
void cuda_profiler_start();
void cuda_profiler_stop();  // waits for the device first, so the range holds whole epochs
#endif

}  // namespace grpo
