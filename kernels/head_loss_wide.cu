// The loss pass's policy head for layers wider than the one-pass kernel takes (head_loss.h):
// two passes over the rows. Pass 1, a warp per row, reads a1 for the logits, the loss and
// dlogits; pass 2, the two-stage column reduction of activations_colsum.h, reads a1 again,
// recomputes h2 and its dropout mask, writes da1 and sums its four column quantities.
#include <algorithm>

#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/gelu.h"
#include "kernels/head_loss_wide.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {

using head_loss::kPartials;
using head_loss::kRowsPerBlock;
constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;

// Pass 1: a warp per row, kPass1Rows rows at a time. Lane l takes the column groups l, l + 32, ...:
// it recomputes h2 there and adds h2 * W_out into the row's three logits, which meet in lane 0 (a
// fixed shuffle tree). Lane 0 then applies the objective, writes the logits and dlogits and keeps
// the block's sums of the loss and of dlogits, which block b writes to partials[4b .. 4b+3]
// (warps added in order). The rows of a batch share each group's b1 and W_out and have their a1
// loads in flight together: a lane's loop over groups otherwise waits a DRAM round trip a group.
constexpr unsigned kPass1Rows = 2;
static_assert(kRowsPerBlock % (kPass1Rows * kWarps) == 0, "a batch's rows are the block's");

__global__ void __launch_bounds__(kThreads, 4)
    head_loss_rows_kernel(HeadLossArgs a, bool vec, float* __restrict__ partials) {
  follow_previous_kernel();
  __shared__ float warp_part[kWarps][kPartials];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t epoch = a.drop.p > 0.f ? *a.drop.epoch : 0u;
  const float scale = dropout_scale(a.drop.p);
  const float inv_m = 1.f / static_cast<float>(a.M);
  const unsigned H = unsigned(a.H), groups = (H + 3) / 4;
  float part[kPartials] = {0.f, 0.f, 0.f, 0.f};  // lane 0's
  for (unsigned k = warp; k < kRowsPerBlock; k += kPass1Rows * kWarps) {
    const size_t r0 = size_t(blockIdx.x) * kRowsPerBlock + k;
    if (r0 >= size_t(a.M)) break;  // the same for the whole warp
    // Rows r0 + i * kWarps; `live` of them exist (the same for the whole warp).
    const unsigned live = unsigned(std::min<size_t>(kPass1Rows, (size_t(a.M) - r0 + kWarps - 1) / kWarps));
    float s[kPass1Rows][kActions] = {};
    for (unsigned g = lane; g < groups; g += 32) {
      const unsigned c0 = 4 * g, n = min(4u, H - c0);
      float x[kPass1Rows][4], b[4], w[kActions][4];
#pragma unroll
      for (unsigned i = 0; i < kPass1Rows; ++i)
        if (i < live) load4(a.a1 + (r0 + i * kWarps) * H + c0, n, vec, x[i]);
      load4(a.b1 + c0, n, vec, b);
#pragma unroll
      for (int j = 0; j < kActions; ++j) load4(a.w_out + j * H + c0, n, vec, w[j]);
#pragma unroll
      for (unsigned i = 0; i < kPass1Rows; ++i) {
        if (i >= live) break;
        const uint32_t r = uint32_t(r0 + i * kWarps);
        const unsigned keep = dropout_keep4(a.drop.p, a.drop.seed, a.drop.purpose, epoch, a.drop.step, r, g);
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) {
          const float h = (keep >> q & 1u) && q < n ? gelu(x[i][q] + b[q]) * scale : 0.f;
#pragma unroll
          for (int j = 0; j < kActions; ++j) s[i][j] += h * w[j][q];
        }
      }
    }
#pragma unroll
    for (unsigned i = 0; i < kPass1Rows; ++i) {
      if (i >= live) break;
      const size_t r = r0 + i * kWarps;
#pragma unroll
      for (int j = 0; j < kActions; ++j) s[i][j] = warp_sum(s[i][j]);
      if (lane == 0) {
        float z[kActions], dz[kActions], entropy;
#pragma unroll
        for (int j = 0; j < kActions; ++j) z[j] = s[i][j] + a.b_out[j];
        part[0] += objective_loss_row(a.objective, z, int(r), a.actions[r], a.adv[r], inv_m, dz, &entropy);
#pragma unroll
        for (int j = 0; j < kActions; ++j) {
          a.logits[kActions * r + j] = z[j];
          a.dlogits[kActions * r + j] = dz[j];
          part[1 + j] += dz[j];
        }
      }
    }
  }
  if (lane == 0)
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q) warp_part[warp][q] = part[q];
  __syncthreads();
  if (threadIdx.x < kPartials) {
    float t = 0.f;
    for (unsigned w = 0; w < kWarps; ++w) t += warp_part[w][threadIdx.x];
    partials[size_t(blockIdx.x) * kPartials + threadIdx.x] = t;
  }
}

// Pass 2, for 4 columns of a row: recomputes h2 and gelu', writes da1 and adds da1 and
// dlogits_j * h2 (j = 0, 1, 2) to the four column sums. b1 and W_out at the thread's columns are
// the same on every row: loaded once (`begin`), not with each row.
struct HeadGrad {
  const float *a1, *b1, *w_out, *dlogits;
  float* da1;
  Bf16* da1_bf16;  // or nullptr
  int H;
  DropoutSpec drop;
  uint32_t epoch;
  float scale;
  bool vec;
  float b[4], w[kActions][4];  // set by begin
  struct Row {
    float x[4], dz[kActions];
  };
  __device__ __forceinline__ void begin(unsigned col0, unsigned n) {
    load4(b1 + col0, n, vec, b);
#pragma unroll
    for (int j = 0; j < kActions; ++j) load4(w_out + j * H + col0, n, vec, w[j]);
  }
  __device__ __forceinline__ Row load(size_t row, unsigned col0, unsigned n) const {
    Row r;
    load4(a1 + row * H + col0, n, vec, r.x);
#pragma unroll
    for (int j = 0; j < kActions; ++j) r.dz[j] = dlogits[kActions * row + j];
    return r;
  }
  __device__ __forceinline__ void use(size_t row, unsigned col0, unsigned n, const Row& r, float (&acc)[4][4]) const {
    float d[4];
    const unsigned keep = dropout_keep4(drop.p, drop.seed, drop.purpose, epoch, drop.step, uint32_t(row), col0 / 4);
#pragma unroll
    for (unsigned q = 0; q < 4; ++q) {
      float grad;
      const float g = gelu_and_grad(r.x[q] + b[q], grad);
      const bool kept = (keep >> q & 1u) && q < n;
      const float h = kept ? g * scale : 0.f;
      const float dh = r.dz[0] * w[0][q] + r.dz[1] * w[1][q] + r.dz[2] * w[2][q];
      d[q] = kept ? dh * scale * grad : 0.f;
      acc[0][q] += d[q];
      acc[1][q] += r.dz[0] * h;
      acc[2][q] += r.dz[1] * h;
      acc[3][q] += r.dz[2] * h;
    }
    const size_t off = row * H + col0;
    if (da1_bf16)
      store4_bf16(da1_bf16 + off, n, vec, d);
    else
      store4(da1 + off, n, vec, d);
  }
};

// Rows of a1 a warp loads before it uses the first (activations_colsum.cuh): with 3 blocks an SM
// (at most 85 registers a thread; 3 rows fit without spills) an SM has 24 warps x 3 rows x
// 512 bytes in flight, enough to keep HBM busy; one row a warp at 2 blocks an SM is not.
constexpr unsigned kRowsInFlight = 3;

__global__ void __launch_bounds__(kThreads, 3)
    head_loss_grad_kernel(HeadGrad f, int M, unsigned rows_per_chunk, float* partial) {
  follow_previous_kernel();
  f.epoch = f.drop.p > 0.f ? *f.drop.epoch : 0u;
  const unsigned col0 = blockIdx.x * colsum::kTileCols + 4 * (threadIdx.x % 32);
  if (col0 < unsigned(f.H)) f.begin(col0, min(4u, unsigned(f.H) - col0));
  colsum::stage1_rows<4, kRowsInFlight>(f, M, f.H, rows_per_chunk, partial);
}

}  // namespace

// Bytes per call: pass 1 reads a1 (4MH) and writes 24M of logits and dlogits; pass 2 reads a1
// and dlogits and writes da1 (8MH + 12M) plus its partial sums, 16 * chunks * H bytes.
unsigned head_loss_wide_cuda(const HeadLossArgs& a, bool vec, float* col_partials, float* row_partials,
                             cudaStream_t stream) {
  const unsigned blocks = unsigned(head_loss::pass1_blocks(a.M));
  launch_overlapped(head_loss_rows_kernel, blocks, kThreads, 0, stream, a, vec, row_partials);
  const HeadGrad f{a.a1, a.b1, a.w_out, a.dlogits, a.da1, a.da1_bf16, a.H, a.drop, 0u, dropout_scale(a.drop.p),
                   vec,  {},   {}};
  launch_overlapped(head_loss_grad_kernel, colsum::stage1_grid(a.M, a.H), colsum::stage1_block(), colsum::smem_bytes(4),
                    stream, f, a.M, colsum::rows_per_chunk(size_t(a.M)), col_partials);
  return blocks;
}

}  // namespace grpo
