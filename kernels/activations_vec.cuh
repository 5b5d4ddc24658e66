// Four neighbouring columns of one row, loaded and stored as one float4 when the row layout allows
// it (N % 4 == 0 and 16-byte aligned bases: every group then starts on a 16-byte boundary), and
// as up to four scalars otherwise (the ragged tail of a row, or odd shapes in tests). Kernels
// decide `vec` once per launch on the host, so the branch is uniform.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/host_device.h"
#include "kernels/bf16.h"
#include "core/vector_access.h"

namespace grpo {

inline bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Loads p[0 .. n-1] (n <= 4) into v; the rest of v is 0.
__device__ __forceinline__ void load4(const float* p, unsigned n, bool vec, float (&v)[4]) {
  if (vec && n == 4) {
    const float4 t = *vector_at<const float4>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    return;
  }
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) v[k] = k < n ? p[k] : 0.f;
}

__device__ __forceinline__ void store4(float* p, unsigned n, bool vec, const float (&v)[4]) {
  if (vec && n == 4) {
    *vector_at<float4>(p) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
#pragma unroll
  for (unsigned k = 0; k < 4; ++k)
    if (k < n) p[k] = v[k];
}

// p[0 .. n-1] = v rounded to bf16: one 8-byte store when vec and n == 4 (vec8: p 8-byte aligned).
__device__ __forceinline__ void store4_bf16(Bf16* p, unsigned n, bool vec8, const float (&v)[4]) {
  if (vec8 && n == 4) {
    *vector_at<uint2>(p) = make_uint2(to_bf16x2(v[0], v[1]), to_bf16x2(v[2], v[3]));
    return;
  }
#pragma unroll
  for (unsigned k = 0; k < 4; ++k)
    if (k < n) p[k] = to_bf16(v[k]);
}
inline bool aligned8(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

// The group of four columns of an [M, N] row-major tensor that this thread covers in a launch
// of one thread per group (ceil(N/4) groups per row). False for the threads past the end.
struct ColumnGroup {
  uint32_t row, g;  // row, and group index (columns 4g .. 4g+n-1)
  unsigned n;       // valid columns in the group: 4, or fewer at a ragged row end
  size_t off;       // element offset of the group's first column
};
__device__ __forceinline__ bool column_group(int M, int N, ColumnGroup& c) {
  const unsigned groups = (unsigned(N) + 3) / 4;
  const size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= size_t(M) * groups) return false;
  c.row = uint32_t(t / groups);
  c.g = uint32_t(t % groups);
  c.n = min(4u, unsigned(N) - 4 * c.g);
  c.off = size_t(c.row) * N + 4 * c.g;
  return true;
}

}  // namespace grpo
