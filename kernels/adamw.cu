// Fused AdamW over the parameter slab (contract in kernels/adamw.h).
#include <stdexcept>

#include "kernels/adamw.h"
#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "core/vector_access.h"

namespace grpo {
namespace {

constexpr unsigned kAdamWThreads = 256;
constexpr unsigned kAdamWMaxBlocks = 8192;

__global__ void __launch_bounds__(kAdamWThreads)
    adamw_kernel(float* __restrict__ params, const float* __restrict__ grads, float* __restrict__ m,
                 float* __restrict__ v, size_t n, const TrainScalars* __restrict__ s, AdamWConfig cfg,
                 WeightCopies copies) {
  follow_previous_kernel();
  // The flag is uniform over the grid, so either every thread returns here or none does.
  if (s->nonfinite != 0) return;
  const AdamWCoeffs k = adamw_coeffs(s->lr, s->adam_step, s->clip_scale, cfg);
  const size_t n4 = n / 4;
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  const size_t tid = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  float4* p4 = vector_at<float4>(params);
  const float4* g4 = vector_at<const float4>(grads);
  float4* m4 = vector_at<float4>(m);
  float4* v4 = vector_at<float4>(v);
  for (size_t i = tid; i < n4; i += stride) {
    float4 p = p4[i], mm = m4[i], vv = v4[i];
    const float4 g = g4[i];
    adamw_element(p.x, g.x, mm.x, vv.x, k);
    adamw_element(p.y, g.y, mm.y, vv.y, k);
    adamw_element(p.z, g.z, mm.z, vv.z, k);
    adamw_element(p.w, g.w, mm.w, vv.w, k);
    p4[i] = p;
    m4[i] = mm;
    v4[i] = vv;
    copies.put(4 * i, p.x);
    copies.put(4 * i + 1, p.y);
    copies.put(4 * i + 2, p.z);
    copies.put(4 * i + 3, p.w);
  }
  if (tid < n - 4 * n4) {  // the scalar tail, at most 3 elements
    const size_t i = 4 * n4 + tid;
    adamw_element(params[i], grads[i], m[i], v[i], k);
    copies.put(i, params[i]);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void adamw_cuda(float* params, const float* grads, float* m, float* v, size_t n, const TrainScalars* s,
                const AdamWConfig& cfg, cudaStream_t stream, const WeightCopies& copies) {
  if (!aligned16(params) || !aligned16(grads) || !aligned16(m) || !aligned16(v))
    throw std::invalid_argument("adamw_cuda: params, grads, m and v must be 16-byte aligned (float4)");
  const Bf16Copy& b = copies.bf16;
  const TransposedCopy& t = copies.transposed;
  if (b.dst && (b.begin > n || b.count > n - b.begin))
    throw std::invalid_argument("adamw_cuda: the bf16 copy's range is outside the slab");
  if (t.dst && (t.begin > n || size_t(t.rows) * t.cols > n - t.begin || t.pitch < t.rows))
    throw std::invalid_argument("adamw_cuda: the transposed copy's matrix is outside the slab, or its pitch short");
  const size_t n4 = n / 4;
  size_t blocks = (n4 + kAdamWThreads - 1) / kAdamWThreads;
  blocks = blocks < 1 ? 1 : (blocks > kAdamWMaxBlocks ? kAdamWMaxBlocks : blocks);
  launch_overlapped(adamw_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kAdamWThreads), 0, stream, params, grads, m,
                    v, n, s, cfg, copies);
}

}  // namespace grpo
