// __host__ __device__ for code shared by the kernels and the host twins. With a CUDA toolkit the
// real headers define the qualifiers; the host-only flavour (no toolkit at all) gets empty ones.
#pragma once
#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#else
#define __host__
#define __device__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#define GRPO_HD __host__ __device__ __forceinline__
