// The cluster kernel's product (rollout_cluster.cu): a step's a1 rows of the cluster's games for
// the block's columns of fc1, from shared memory: the cluster's h1 rows (xs, `rows` of them) and
// the block's rows of W1 (ws, `cols` of them), each row H elements, `stride` apart. Each element
// goes to out(row, col, value): row of the cluster's rows, col of the block's columns.
//
// Two ways, each sum of a tile of k's chain over k ascending, the tiles' sums added to 0 in order,
// plus 0 (the bias the few-row kernel adds, absent here), as kernels/matmul_few_rows.cu sums
// (kernels/few_rows.h):
//   product        fmaf chains on the CUDA cores (fp32 or bf16 operands): the few-row kernel's
//                  bits.
//   product_mma    bf16 on the tensor cores (core/mma.cuh): the emulator's bits are the same;
//                  a GPU's differ in the last places (the tensor cores round their own way).
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/mma.cuh"
#include "engine/cuda/rollout_step_block.cuh"
#include "kernels/bf16.h"
#include "kernels/few_rows.h"
#include "core/vector_access.h"

namespace grpo::rollout_cluster_detail {

using rollout_step_detail::kStepThreads;

constexpr unsigned kRowTile = 8;    // rows a thread sums at once against one column of W1
constexpr unsigned kMmaChains = 4;  // tiles of k a warp sums at once on the tensor cores (independent chains)

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

// Four elements rounded to T (the pointer's type) and packed as one 16-byte (fp32) or 8-byte
// (bf16) store: load4_smem's inverse.
__device__ __forceinline__ float4 chunk4(float*, const float (&v)[4]) { return make_float4(v[0], v[1], v[2], v[3]); }
__device__ __forceinline__ uint2 chunk4(Bf16*, const float (&v)[4]) {
  return make_uint2(to_bf16x2(v[0], v[1]), to_bf16x2(v[2], v[3]));
}

// R rows of a thread's column (rows r, r + sets, ..., x0 the first's, `step` elements between
// them; w the column's row of W1): an fmaf chain a tile of kFewRowsSumTile k for each, added to
// the row's sum. R is a compile-time count so that the R chains stay in registers and interleave:
// each step of four k issues its R + 1 loads together, then 4 R fmaf, R independent at a time,
// where a run-time count left each row's four dependent fmaf waiting for that row's load. (Loading
// the next step's operands ahead as well spilled at R 8, even with 255 registers a thread.)
template <unsigned R, class T, class Out>
__device__ __forceinline__ void product_rows(const T* x0, size_t step, const T* w, unsigned r, unsigned sets,
                                             unsigned j, unsigned H, const Out& out) {
  float acc[R];
#pragma unroll
  for (unsigned i = 0; i < R; ++i) acc[i] = 0.f;
  for (unsigned k0 = 0; k0 < H; k0 += kFewRowsSumTile) {
    const unsigned k1 = min(H, k0 + kFewRowsSumTile);
    float part[R];
#pragma unroll
    for (unsigned i = 0; i < R; ++i) part[i] = 0.f;
    unsigned k = k0;
    for (; k + 4 <= k1; k += 4) {
      float wv[4], xv[R][4];
      load4_smem(w + k, wv);
#pragma unroll
      for (unsigned i = 0; i < R; ++i) load4_smem(x0 + i * step + k, xv[i]);
#pragma unroll
      for (unsigned q = 0; q < 4; ++q)
#pragma unroll
        for (unsigned i = 0; i < R; ++i) part[i] = fmaf(xv[i][q], wv[q], part[i]);
    }
    for (; k < k1; ++k)
#pragma unroll
      for (unsigned i = 0; i < R; ++i) part[i] = fmaf(widen(x0[i * step + k]), widen(w[k]), part[i]);
#pragma unroll
    for (unsigned i = 0; i < R; ++i) acc[i] += part[i];
  }
#pragma unroll
  for (unsigned i = 0; i < R; ++i) out(r + i * sets, j, acc[i] + 0.f);
}

// f(std::integral_constant<unsigned, n>{}) for n in 1 .. R.
template <unsigned R, class F>
__device__ __forceinline__ void with_row_count(unsigned n, const F& f) {
  if constexpr (R > 1) {
    if (n < R) return with_row_count<R - 1>(n, f);
  }
  f(std::integral_constant<unsigned, R>{});
}

// A thread owns a column j and every sets-th row from its set, up to kRowTile at a time, and
// walks k four at a time (product_rows), so one load of W1 serves up to kRowTile fmaf and one
// load of a row (a warp broadcast) serves four.
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
      with_row_count<kRowTile>(n, [&](auto count) {
        product_rows<decltype(count)::value>(xs + size_t(r0) * stride, size_t(sets) * stride, w, r0, sets, j, H, out);
      });
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

// The tensor-core product's fragments of W1 (A) that a warp keeps in registers for all T steps:
// the first kTiles tiles of k of the m-tile 16 w (the block's columns 16 w .. 16 w + 15, for warp
// w), so that a step's product reads those from registers instead of shared memory. A step reads
// the block's 64 KB of W1 and 4 x 8 KB of h1 rows from shared memory at the small preset (H 512,
// one game a block): ~770 cycles of the SM's 128 bytes a cycle, twice that where two blocks share
// an SM. Two of the four tiles held: 32 KB less a block and step, 64 registers a thread. Element e
// of step i (16 k) of tile c is this lane's pair e of A at k = c kTile + 16 i + 2 (lane % 4), as
// product_mma loads it.
constexpr unsigned kMmaHeldTiles = 2;

template <unsigned kTiles>
struct HeldW1 {
  static constexpr unsigned kSteps = unsigned(kFewRowsSumTile) / 16;
  uint32_t a[kTiles > 0 ? kTiles : 1][kSteps][4];
};

// Whether warp `warp` holds fragments (load_held_w1 loads them): its m-tile has columns, and the
// first kMmaChains tiles of k, the ones product_mma runs as whole tiles from k 0, are whole.
__device__ __forceinline__ bool held_w1_fits(unsigned cols, unsigned H, unsigned warp) {
  return 16 * warp < cols && H >= kMmaChains * unsigned(kFewRowsSumTile);
}

// The calling warp's held fragments, from the block's rows of W1 in shared memory (ws, staged and
// visible to the warp), where held_w1_fits; nothing otherwise (they are not read then).
template <unsigned kTiles>
__device__ __forceinline__ void load_held_w1(HeldW1<kTiles>& held, const Bf16* ws, unsigned cols, unsigned H) {
  const unsigned stride = smem_stride(H, true), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const unsigned warp = threadIdx.x / 32, m0 = 16 * warp;
  if (!held_w1_fits(cols, H, warp)) return;
  const Bf16* w0 = m0 + g < cols ? ws + size_t(m0 + g) * stride : ws;
  const Bf16* w1 = m0 + g + 8 < cols ? ws + size_t(m0 + g + 8) * stride : ws;
#pragma unroll
  for (unsigned c = 0; c < kTiles; ++c)
#pragma unroll
    for (unsigned i = 0; i < HeldW1<kTiles>::kSteps; ++i) {
      const unsigned k = c * unsigned(kFewRowsSumTile) + 16 * i + 2 * q;
      held.a[c][i][0] = pair(w0, k), held.a[c][i][1] = pair(w1, k), held.a[c][i][2] = pair(w0, k + 8);
      held.a[c][i][3] = pair(w1, k + 8);
    }
}

// A warp at a time takes 16 of the block's columns (the m of m16n8k16: 16 rows of W1, A) and 8
// of the cluster's rows (the n: 8 h1 rows, B), so that no row of a product is padding where the
// cluster has 8 games, and sums kMmaChains tiles of k at once: each tile its own chain of
// mma.sync from 0, 16 k a step, the tiles' sums then added to the element's in order
// (kernels/few_rows.h). Four chains of 8 steps (the small preset's 512 k) wait for one mma's
// latency a step where one chain of 32 waited for it 32 times. Row i of D depends on row i of A
// alone and column j on column j of B, so a lane whose row of W1 (past `cols`) reads the first
// row of W1 instead, one whose h1 row (past `rows`) takes zeros (reading another row of xs would
// read what the block sends no a1 for: rollout_cluster.cu's mailboxes order only the reads that
// a send follows), and their results in that row or column are not stored. The lanes' stores
// of D follow a __syncwarp: a lane stores what other lanes' loads fed, and the mma is no
// ordering of memory.
// held: the warp's fragments (kHeld tiles, HeldW1), which the items of its m-tile 16 w take for
// their first kHeld chains (kHeld 0: none).
template <unsigned kHeld, class Out>
__device__ __forceinline__ void product_mma(const Bf16* xs, const Bf16* ws, unsigned rows, unsigned cols, unsigned H,
                                            const HeldW1<kHeld>& held, const Out& out) {
  static_assert(kHeld <= kMmaChains, "a held tile is one of the first block's chains");
  constexpr unsigned kWarps = kStepThreads / 32, kTile = kFewRowsSumTile, kSteps = kTile / 16;
  static_assert(kTile % 16 == 0, "a tile of the sum is whole steps of 16");
  const unsigned stride = smem_stride(H, true), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  // Items (16 columns, 8 rows) in order, item i on warp i % kWarps: warp-uniform, as mma.sync
  // requires, and counted rather than divided out of an index.
  unsigned item = 0;
  for (unsigned m0 = 0; m0 < cols; m0 += 16)
    for (unsigned n0 = 0; n0 < rows; n0 += 8, ++item) {
      if (item % kWarps != threadIdx.x / 32) continue;
      const Bf16* w0 = m0 + g < cols ? ws + size_t(m0 + g) * stride : ws;
      const Bf16* w1 = m0 + g + 8 < cols ? ws + size_t(m0 + g + 8) * stride : ws;
      const bool has_x = n0 + g < rows;
      const Bf16* x = has_x ? xs + size_t(n0 + g) * stride : xs;
      float sum[4] = {0.f, 0.f, 0.f, 0.f};
      for (unsigned t0 = 0; t0 < H; t0 += kMmaChains * kTile) {  // kMmaChains tiles from k t0
        float d[kMmaChains][4];
#pragma unroll
        for (unsigned c = 0; c < kMmaChains; ++c) d[c][0] = d[c][1] = d[c][2] = d[c][3] = 0.f;
        if (t0 + kMmaChains * kTile <= H) {
          // Whole tiles: a step's fragments (this lane's pairs of A's two rows and of B's column,
          // each chain's) loaded before the previous step's products issue, so that their
          // shared-memory latency hides behind the products'; no test in the loop.
          struct Fragments {
            uint32_t a[kMmaChains][4], b[kMmaChains][2];
          };
          // Step i's fragments; with from_held (kHeld chains' A held for this item), the first
          // kHeld chains' A from the warp's registers.
          const auto load = [&](unsigned i, Fragments& f, auto from_held) {
#pragma unroll
            for (unsigned c = 0; c < kMmaChains; ++c) {
              const unsigned kc = t0 + 2 * q + 16 * i + c * kTile;      // this lane's first k of the step
              if (decltype(from_held)::value && int(c) < int(kHeld)) {  // int: kHeld may be 0
                const uint32_t(&h)[4] = held.a[int(c) < int(kHeld) ? c : 0][i];
                f.a[c][0] = h[0], f.a[c][1] = h[1], f.a[c][2] = h[2], f.a[c][3] = h[3];
              } else {
                f.a[c][0] = pair(w0, kc), f.a[c][1] = pair(w1, kc), f.a[c][2] = pair(w0, kc + 8);
                f.a[c][3] = pair(w1, kc + 8);
              }
              f.b[c][0] = has_x ? pair(x, kc) : 0u, f.b[c][1] = has_x ? pair(x, kc + 8) : 0u;
            }
          };
          const auto products = [&](const Fragments& f) {
#pragma unroll
            for (unsigned c = 0; c < kMmaChains; ++c) mma_m16n8k16_bf16(d[c], f.a[c], f.b[c], d[c]);
          };
          const auto whole_tiles = [&](auto from_held) {
            Fragments now;
            load(0, now, from_held);
#pragma unroll
            for (unsigned i = 1; i < kSteps; ++i) {
              Fragments next;
              load(i, next, from_held);
              products(now);
              now = next;
            }
            products(now);
          };
          if (kHeld > 0 && t0 == 0 && m0 == 16 * (threadIdx.x / 32) && held_w1_fits(cols, H, threadIdx.x / 32))
            whole_tiles(std::true_type{});
          else
            whole_tiles(std::false_type{});
        } else {
          // The last tiles: those past H, and their steps past H, skipped (the same for every
          // lane); the pairs of a step past H read as 0.
          for (unsigned i = 0; i < kSteps; ++i)
#pragma unroll
            for (unsigned c = 0; c < kMmaChains; ++c) {
              const unsigned k = t0 + c * kTile + 16 * i;
              if (k >= H) continue;
              const unsigned kl = k + 2 * q;
              const uint32_t a[4] = {pair_within(w0, kl, H), pair_within(w1, kl, H), pair_within(w0, kl + 8, H),
                                     pair_within(w1, kl + 8, H)};
              const uint32_t b[2] = {has_x ? pair_within(x, kl, H) : 0u, has_x ? pair_within(x, kl + 8, H) : 0u};
              mma_m16n8k16_bf16(d[c], a, b, d[c]);
            }
        }
#pragma unroll
        for (unsigned c = 0; c < kMmaChains; ++c)
          if (t0 + c * kTile < H)
#pragma unroll
            for (unsigned e = 0; e < 4; ++e) sum[e] += d[c][e];
      }
      __syncwarp();
#pragma unroll
      for (unsigned e = 0; e < 4; ++e) {
        const unsigned col = m0 + g + 8 * (e / 2), row = n0 + 2 * q + e % 2;
        if (row < rows && col < cols) out(row, col, sum[e] + 0.f);
      }
    }
}

}  // namespace grpo::rollout_cluster_detail
