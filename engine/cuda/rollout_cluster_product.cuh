// The cluster kernel's product (rollout_cluster.cu): a step's a1 rows of the cluster's games for
// the block's columns of fc1, from shared memory: the cluster's h1 rows (xs, `rows` of them) and
// the block's rows of W1 (ws, `cols` of them), each row H elements, `stride` apart. Each element
// goes to out(row, col, value): row of the cluster's rows, col of the block's columns.
//
// Two ways, each sum over k ascending from 0, plus 0 (the bias the few-row kernel adds, absent
// here), as kernels/matmul_few_rows.cu sums:
//   product        fmaf chains on the CUDA cores (fp32 or bf16 operands): the few-row kernel's
//                  bits.
//   product_mma    bf16 on the tensor cores (core/mma.cuh): the emulator's bits are the same;
//                  a GPU's differ in the last places (the tensor cores round their own way).
#pragma once
#include <cstdint>

#include "core/mma.cuh"
#include "engine/cuda/rollout_step_block.cuh"
#include "kernels/bf16.h"
#include "core/vector_access.h"

namespace grpo::rollout_cluster_detail {

using rollout_step_detail::kStepThreads;

constexpr unsigned kRowTile = 8;   // rows a thread sums at once against one column of W1
constexpr unsigned kMmaTiles = 2;  // 8-column tiles a warp multiplies at once (independent sums)

// Shared-memory rows of H elements are `stride` apart. The fmaf product: a multiple of 4 (aligned
// four-element loads) plus 4, so that the lanes of a warp reading the same k of different rows
// hit different banks. The tensor-core product: a multiple of 16 bf16 plus 8 (4 words mod 8), so
// that the 8 rows x 4 words of a fragment load hit 32 different banks (rows 4, 12, 20 or 28
// words mod 32 apart: 8 distinct multiples of 4).
GRPO_HD unsigned smem_stride(unsigned H, bool mma) { return mma ? (H + 15) / 16 * 16 + 8 : (H + 3) / 4 * 4 + 4; }

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(Bf16 x) { return to_float(x); }
// Four consecutive elements of a shared-memory row, 16-byte (fp32) or 8-byte (bf16) aligned.
__device__ __forceinline__ void load4_smem(const float* p, float (&v)[4]) {
  const float4 t = *vector_at<const float4>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void load4_smem(const Bf16* p, float (&v)[4]) {
  const uint2 t = *vector_at<const uint2>(p);
  v[0] = to_float(Bf16{uint16_t(t.x & 0xFFFFu)}), v[1] = to_float(Bf16{uint16_t(t.x >> 16)});
  v[2] = to_float(Bf16{uint16_t(t.y & 0xFFFFu)}), v[3] = to_float(Bf16{uint16_t(t.y >> 16)});
}

// p[0 .. n-1] = v (n <= 4), rounded to T; p 16-byte (fp32) or 8-byte (bf16) aligned when n == 4.
// p may lie in another block's shared memory (rollout_cluster.cu's staged h1 rows).
__device__ __forceinline__ void store4_smem(float* p, unsigned n, const float (&v)[4]) {
  if (n == 4) {
    *vector_at<float4>(p) = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
  for (unsigned k = 0; k < n; ++k) p[k] = v[k];
}
__device__ __forceinline__ void store4_smem(Bf16* p, unsigned n, const float (&v)[4]) {
  if (n == 4) {
    *vector_at<uint2>(p) = make_uint2(uint32_t(to_bf16(v[0]).bits) | uint32_t(to_bf16(v[1]).bits) << 16,
                                      uint32_t(to_bf16(v[2]).bits) | uint32_t(to_bf16(v[3]).bits) << 16);
    return;
  }
  for (unsigned k = 0; k < n; ++k) p[k] = to_bf16(v[k]);
}

// A thread owns a column j and every sets-th row from its set, up to kRowTile at a time, and
// walks k four at a time, so one load of W1 serves up to kRowTile fmaf and one load of a row
// (a warp broadcast) serves four.
template <class T, class Out>
__device__ __forceinline__ void product(const T* xs, const T* ws, unsigned rows, unsigned cols, unsigned width,
                                        unsigned H, const Out& out) {
  const unsigned stride = smem_stride(H, false), sets = max(1u, unsigned(kStepThreads) / width);
  for (unsigned item = threadIdx.x; item < sets * width; item += kStepThreads) {
    const unsigned j = item % width, set = item / width;
    if (j >= cols) continue;
    const T* w = ws + size_t(j) * stride;
    for (unsigned r0 = set; r0 < rows; r0 += sets * kRowTile) {
      const unsigned n = min(kRowTile, (rows - r0 + sets - 1) / sets);  // rows r0, r0 + sets, ...
      float acc[kRowTile];
#pragma unroll
      for (unsigned i = 0; i < kRowTile; ++i) acc[i] = 0.f;
      unsigned k = 0;
      for (; k + 4 <= H; k += 4) {
        float wv[4];
        load4_smem(w + k, wv);
#pragma unroll
        for (unsigned i = 0; i < kRowTile; ++i) {
          if (i >= n) break;
          float xv[4];
          load4_smem(xs + size_t(r0 + i * sets) * stride + k, xv);
#pragma unroll
          for (unsigned q = 0; q < 4; ++q) acc[i] = fmaf(xv[q], wv[q], acc[i]);
        }
      }
      for (; k < H; ++k)
        for (unsigned i = 0; i < n; ++i)
          acc[i] = fmaf(widen(xs[size_t(r0 + i * sets) * stride + k]), widen(w[k]), acc[i]);
#pragma unroll
      for (unsigned i = 0; i < kRowTile; ++i)
        if (i < n) out(r0 + i * sets, j, acc[i] + 0.f);
    }
  }
}

// Elements k and k + 1 of a shared-memory row as one register, the first in the low half.
__device__ __forceinline__ uint32_t pair(const Bf16* row, unsigned k) {
  return *reinterpret_cast<const uint32_t*>(row + k);  // k even, rows 16-byte aligned
}
// The same, zero past H (the last step of k when H is not a multiple of 16).
__device__ __forceinline__ uint32_t pair_within(const Bf16* row, unsigned k, unsigned H) {
  if (k >= H) return 0u;
  return k + 1 < H ? pair(row, k) : row[k].bits;
}

// A warp at a time takes 16 rows (the m of m16n8k16) and kMmaTiles tiles of 8 columns, and
// walks k 16 at a time, its kMmaTiles sums independent of each other. Row i of D depends on row i
// of A alone and column j on column j of B, so a lane whose row of A (past `rows`) or column of B
// (past `cols`) is not there reads the cluster's first h1 row instead (staged, so initialised)
// and its results in that row or column are not stored: no branch in the loop but its last step.
template <class Out>
__device__ __forceinline__ void product_mma(const Bf16* xs, const Bf16* ws, unsigned rows, unsigned cols, unsigned H,
                                            const Out& out) {
  constexpr unsigned kWarps = kStepThreads / 32;
  const unsigned stride = smem_stride(H, true), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  // Items (a row tile, a group of column tiles) in row-major order, item i on warp i % kWarps:
  // warp-uniform, as mma.sync requires, and counted rather than divided out of an index.
  unsigned item = 0;
  for (unsigned m0 = 0; m0 < rows; m0 += 16)
    for (unsigned n0 = 0; n0 < cols; n0 += 8 * kMmaTiles, ++item) {
      if (item % kWarps != threadIdx.x / 32) continue;
      const Bf16* x0 = m0 + g < rows ? xs + size_t(m0 + g) * stride : xs;
      const Bf16* x1 = m0 + g + 8 < rows ? xs + size_t(m0 + g + 8) * stride : xs;
      const Bf16* w[kMmaTiles];
      float d[kMmaTiles][4];
#pragma unroll
      for (unsigned p = 0; p < kMmaTiles; ++p) {
        const unsigned n = n0 + 8 * p + g;  // this lane's column of B
        w[p] = n < cols ? ws + size_t(n) * stride : xs;
        d[p][0] = d[p][1] = d[p][2] = d[p][3] = 0.f;
      }
      // A step's fragments: this lane's pairs of A's two rows and of B's kMmaTiles columns.
      struct Fragments {
        uint32_t a[4], b[kMmaTiles][2];
      };
      const auto load = [&](unsigned k, Fragments& f) {
        f.a[0] = pair(x0, k), f.a[1] = pair(x1, k), f.a[2] = pair(x0, k + 8), f.a[3] = pair(x1, k + 8);
#pragma unroll
        for (unsigned p = 0; p < kMmaTiles; ++p) f.b[p][0] = pair(w[p], k), f.b[p][1] = pair(w[p], k + 8);
      };
      const auto products = [&](const Fragments& f) {
#pragma unroll
        for (unsigned p = 0; p < kMmaTiles; ++p) mma_m16n8k16_bf16(d[p], f.a, f.b[p], d[p]);
      };
      // The whole steps of 16 (as many for every lane), each step's fragments loaded before the
      // previous step's products issue, so that their shared-memory latency hides behind the
      // products' instead of adding to it: the same products in the same order.
      const unsigned whole = H / 16;
      unsigned k = 2 * q;  // this lane's first k of each step of 16
      if (whole > 0) {
        Fragments now;
        load(k, now);
#pragma unroll 2
        for (unsigned i = 1; i < whole; ++i, k += 16) {
          Fragments next;
          load(k + 16, next);
          products(now);
          now = next;
        }
        products(now);
        k += 16;
      }
      if (k - 2 * q < H) {  // the last, partial step (the same for every lane)
        const uint32_t a[4] = {pair_within(x0, k, H), pair_within(x1, k, H), pair_within(x0, k + 8, H),
                               pair_within(x1, k + 8, H)};
#pragma unroll
        for (unsigned p = 0; p < kMmaTiles; ++p) {
          const uint32_t b[2] = {pair_within(w[p], k, H), pair_within(w[p], k + 8, H)};
          mma_m16n8k16_bf16(d[p], a, b, d[p]);
        }
      }
#pragma unroll
      for (unsigned p = 0; p < kMmaTiles; ++p)
#pragma unroll
        for (unsigned e = 0; e < 4; ++e) {
          const unsigned row = m0 + g + 8 * (e / 2), col = n0 + 8 * p + 2 * q + e % 2;
          if (row < rows && col < cols) out(row, col, d[p][e] + 0.f);
        }
    }
}

}  // namespace grpo::rollout_cluster_detail
