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
// Out of line on both sides, for rarely run code that would otherwise sit among a hot kernel's
// instructions (a rollout's first-step reward). `inline`: one definition across files. The
// other compilers get the attribute spelled out: only nvcc knows __noinline__ (a macro of that
// name would break libstdc++'s own __attribute__((__noinline__))).
#if defined(__CUDACC__)
#define GRPO_HD_COLD __host__ __device__ __noinline__ inline
#else
#define GRPO_HD_COLD __attribute__((noinline)) inline
#endif
