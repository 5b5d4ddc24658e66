// Vectorised tanh-GELU for the host twins (gelu_host.cpp, layernorm_host.cpp, engine/host). glibc's tanhf
// is a scalar library call, and the host executor evaluates GELU about five times per hidden
// activation per epoch (14M activations at the small preset), so the twins use this instead:
// tanh(y) = sign(y) (1 - e) / (1 + e) with e = exp(-2 min(|y|, 9)) from Cephes' expf polynomial,
// in GCC vector extensions, eight lanes with AVX2 (run-time dispatch) else four (SSE2 is the
// baseline: the build has no -march; auto-vectorisation failed on the clamp, a branch to GCC).
// Error against tanhf: a few float ulps relative for |y| > 0.1 and under 1e-7 absolute below,
// well inside the twins' 1e-5 + 1e-4|ref| tolerances.
#pragma once

namespace grpo::hostmath {

// g[i] = gelu(x[i]) (kernels/gelu_vec_host.cpp: 8 lanes with AVX2 when the CPU has it, else 4).
void gelu_n(const float* x, float* g, int n);

// g[i] = gelu(x[i]) and dg[i] = gelu'(x[i]) from one tanh (g may alias x).
void gelu_and_grad_n(const float* x, float* g, float* dg, int n);

// Below this many elements an op runs on the calling thread: handing chunks to the pool's
// worker (cpu/parallel.h) costs more than the work.
constexpr double kParallelElements = 1 << 14;

}  // namespace grpo::hostmath
