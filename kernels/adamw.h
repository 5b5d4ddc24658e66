// Fused AdamW over the whole parameter slab (docs/spec/training.md step 7, PyTorch's semantics), in
// the style of apex's "capturable" Adam: the learning rate, the step count, the clip factor and
// the no-op flag are read from the TrainScalars in device memory, never passed by value, so one
// captured graph serves every epoch (docs/notes/cuda-graphs.md item 1).
//
// Contract (kernel and host twin alike), for every i < n, unless s->nonfinite != 0, in which
// case NOTHING is written (params, m, v untouched; advance_schedule counts the skip):
//   t  = s->adam_step + 1              (adamw never writes the scalars; advance_schedule
//                                       increments adam_step after it, see train_scalars.h)
//   g  = s->clip_scale * grads[i]      (clipping folded in; grads itself is not modified)
//   p  = p * (1 - lr * wd)             (decoupled weight decay; 1 - lr*wd computed in double)
//   m  = b1 m + (1 - b1) g
//   v  = b2 v + (1 - b2) g^2
//   p  = p - step_size * (m / (sqrt(v) / bc2_sqrt + eps))
//        step_size = lr / (1 - b1^t), bc2_sqrt = sqrt(1 - b2^t), computed in double from t
//        (powers by repeated squaring) and rounded to float once.
// Exactness: every float and double operation is a single IEEE-rounded +, *, /, sqrt, and on
// the device the products and sums go through __fmul_rn/__fadd_rn/__dmul_rn so that nvcc
// cannot contract them into FMAs: the kernel equals the host twin BIT FOR BIT.
// Device: 16-byte loads and stores (float4) in a grid-stride loop, a scalar tail of n % 4.
// Bytes moved: 28 per element (read p, g, m, v; write p, m, v) + 16 of scalars.
// Requirements: params, grads, m, v 16-byte aligned (slab views from cudaMalloc).
// With WeightCopies, it also writes the working copies of the elements it updates: to_bf16(p)
// of each element i in [begin, begin + count) to dst[i - begin] (Bf16Copy, kernels/bf16.h's
// rounding: fc1.weight's copy under --precision bf16), and each element of one matrix to its
// transposed place (TransposedCopy: fc_in.weight's copy for the rollout). The copies come out
// of the update itself, with no pass of their own. Skipped updates write no copy either (the
// parameters, and so their copies, stay as they were).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/exact_math.h"
#include "core/host_device.h"
#include "kernels/bf16.h"
#include "kernels/train_scalars.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

// Constant hyper-parameters (fine as by-value kernel arguments: they never change in a run).
// Doubles, like PyTorch's Python floats, so 1 - b1^t and 1 - lr*wd are PyTorch's numbers.
struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-5;
};

namespace adamw_detail {
// b^e by repeated squaring: the same sequence of rounded products on host and device (pow()
// itself differs between libm and CUDA's math library in the last bit).
GRPO_HD double powu(double b, uint32_t e) {
  double r = 1.0;
  while (e != 0) {
    if (e & 1u) r = mul_rn(r, b);
    b = mul_rn(b, b);
    e >>= 1;
  }
  return r;
}
}  // namespace adamw_detail

// The bf16 copy of one range of the slab that an update also writes (dst == nullptr: none).
struct Bf16Copy {
  size_t begin = 0, count = 0;
  Bf16* dst = nullptr;
  GRPO_HD void put(size_t i, float p) const {
    if (dst && i - begin < count) dst[i - begin] = to_bf16(p);  // unsigned: i < begin is out too
  }
};

// A transposed copy of one [rows, cols] matrix of the slab that an update also writes
// (kernels/fc_in.h's fc_in.weight transposed, which the rollout reads): element i = begin + r cols
// + c goes to dst[c pitch + r] (dst == nullptr: none). The padding past rows in each row of dst
// is never written: it stays as the whole transpose left it.
struct TransposedCopy {
  size_t begin = 0;
  unsigned rows = 0, cols = 0, pitch = 0;
  float* dst = nullptr;
  GRPO_HD void put(size_t i, float p) const {
    const size_t j = i - begin;  // unsigned: i < begin is out too
    if (dst && j < size_t(rows) * cols) dst[(j % cols) * pitch + j / cols] = p;
  }
};

// The working copies of the parameters that an update writes as it moves them, so that no pass
// of their own refreshes them after it (engine/step.cpp): fc1.weight's bf16 copy, fc_in.weight
// transposed.
struct WeightCopies {
  Bf16Copy bf16;
  TransposedCopy transposed;
  WeightCopies() = default;
  // Implicit: a call site with a bf16 copy alone.
  WeightCopies(const Bf16Copy& b, const TransposedCopy& t = {}) : bf16(b), transposed(t) {}  // NOLINT
  GRPO_HD void put(size_t i, float p) const {
    bf16.put(i, p);
    transposed.put(i, p);
  }
};

// Per-update coefficients, computed once per thread from the device-resident scalars.
struct AdamWCoeffs {
  float clip, decay, b1, one_minus_b1, b2, one_minus_b2, step_size, bc2_sqrt, eps;
};

GRPO_HD AdamWCoeffs adamw_coeffs(float lr, uint32_t adam_step, float clip_scale, const AdamWConfig& c) {
  using adamw_detail::powu;
  const uint32_t t = adam_step + 1;
  AdamWCoeffs k;
  k.clip = clip_scale;
  k.decay = static_cast<float>(1.0 - mul_rn(double(lr), c.weight_decay));
  k.b1 = static_cast<float>(c.beta1);
  k.one_minus_b1 = static_cast<float>(1.0 - c.beta1);
  k.b2 = static_cast<float>(c.beta2);
  k.one_minus_b2 = static_cast<float>(1.0 - c.beta2);
  k.step_size = static_cast<float>(static_cast<double>(lr) / (1.0 - powu(c.beta1, t)));
  k.bc2_sqrt = static_cast<float>(sqrt(1.0 - powu(c.beta2, t)));
  k.eps = static_cast<float>(c.eps);
  return k;
}

// One element's update; shared by the kernel (per float4 lane) and the host twin.
GRPO_HD void adamw_element(float& p, float grad, float& m, float& v, const AdamWCoeffs& k) {
  const float g = mul_rn(k.clip, grad);
  const float decayed = mul_rn(p, k.decay);
  m = add_rn(mul_rn(k.b1, m), mul_rn(k.one_minus_b1, g));
  v = add_rn(mul_rn(k.b2, v), mul_rn(k.one_minus_b2, mul_rn(g, g)));
  const float denom = add_rn(sqrtf(v) / k.bc2_sqrt, k.eps);
  p = add_rn(decayed, -mul_rn(k.step_size, m / denom));
}

// Host twin; all pointers are host memory.
void adamw_host(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                const AdamWConfig& cfg, const WeightCopies& copies = {});

#if defined(GRPO_HAVE_CUDA)
// All pointers are device memory; one kernel in `stream`.
void adamw_cuda(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                const AdamWConfig& cfg, cudaStream_t stream, const WeightCopies& copies = {});
#endif

}  // namespace grpo
