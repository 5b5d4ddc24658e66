// The loss pass's policy head in one pass over the rows (contract in head_loss.h).
#include <set>
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/gelu.h"
#include "kernels/head_loss.h"
#include "kernels/head_loss_wide.h"
#include "kernels/reduce_block.h"

namespace grpo {

namespace {

using head_loss::kPartials;
constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;

__device__ __forceinline__ void unpack(const float4& f, float (&v)[4]) {
  v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
}

// A block per row chunk of colsum's partition (activations_colsum.h). Its threads form teams of
// `team` threads (a power of two, 32 to 256), each team a row at a time; thread t of a team owns
// the CG column groups t, t + team, ... (four columns each) of every row it sees, so its four
// column sums stay in its registers (b1 and W_out at the block's columns wait in shared memory).
// A round takes R rows a team (slot s = i * teams + team index is row base + s):
//   1. h2 = dropout(gelu(a1 + b1)) and gk = gelu' * keep / (1 - p), and the thread's share of
//      the three logits, which meet in shared memory (a shuffle tree a warp, then the team's
//      warps in order);
//   2. one thread a slot applies the objective (loss, dlogits);
//   3. da1 = (dlogits W_out) * gk is written, and da1 and dlogits_j * h2 join the column sums.
// a1 is read once and the GELU and the mask are computed once an element: the two passes of
// head_loss_wide.cu each read a1 and compute both. The rounds overlap: between two barriers the
// slot threads apply the objective to round k while every thread runs step 1 of round k + 1,
// then, after the barrier, step 3 of round k. So the slot threads' serial work hides behind the
// other warps' step 1, and a round costs one barrier, not two. h2 and gk wait in shared memory
// (each thread's own, by the round's parity: `kept`), the logits' shares and dlogits likewise
// by parity; a1's loads run a round ahead of step 1. Every sum is added in the same order as
// with one round at a time.
template <unsigned CG, unsigned R>
__global__ void __launch_bounds__(kThreads, 2)
    head_loss_fused_kernel(HeadLossArgs a, bool vec, unsigned team, unsigned rows_per_chunk,
                           float* __restrict__ col_partials, float* __restrict__ row_partials) {
  constexpr unsigned kMaxSlots = R * kWarps;                     // teams * R, at most 8 teams of 32
  constexpr unsigned kKept = R * CG;                             // float4 of h2 (and of gk) a thread keeps
  __shared__ float team_logits[2][kMaxSlots][kWarps][kActions];  // [parity][slot][warp of the team][j]
  __shared__ float slot_dz[2][kMaxSlots][kActions];
  __shared__ float slot_part[kMaxSlots][kPartials];
  GRPO_DYNAMIC_SHARED(float4, kept);  // [parity][h2: i * CG + c, then gk][thread]: launch_fused's
  const unsigned teams = kThreads / team, my_team = threadIdx.x / team, t = threadIdx.x % team;
  const unsigned lane = threadIdx.x % 32, warp_in_team = t / 32, slots = teams * R;
  const unsigned H = unsigned(a.H), groups = (H + 3) / 4;
  const uint32_t epoch = a.drop.p > 0.f ? *a.drop.epoch : 0u;
  const float scale = dropout_scale(a.drop.p);
  const float inv_m = 1.f / static_cast<float>(a.M);
  const size_t r0 = size_t(blockIdx.x) * rows_per_chunk;
  const size_t r1 = std::min(size_t(a.M), r0 + rows_per_chunk);

  // b1 and W_out at the block's columns, loaded once: group g's four columns at [g].
  constexpr unsigned kMaxGroups = CG * kThreads;
  __shared__ float4 bw[1 + kActions][kMaxGroups];
  for (unsigned g = threadIdx.x; g < kMaxGroups; g += kThreads) {
    const unsigned m = g < groups ? min(4u, H - 4 * g) : 0u;
    float v[4];
    load4(a.b1 + 4 * g, m, vec, v);  // m == 0 loads nothing
    bw[0][g] = make_float4(v[0], v[1], v[2], v[3]);
#pragma unroll
    for (int j = 0; j < kActions; ++j) {
      load4(a.w_out + j * H + 4 * g, m, vec, v);
      bw[1 + j][g] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
  unsigned n[CG];  // valid columns of each group: 4, fewer at a ragged end, 0 past the row
  float acc[CG][kPartials][4];
#pragma unroll
  for (unsigned c = 0; c < CG; ++c) {
    const unsigned g = t + team * c;
    n[c] = g < groups ? min(4u, H - 4 * g) : 0u;
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q)
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) acc[c][q][k] = 0.f;
  }
  float part[kPartials] = {0.f, 0.f, 0.f, 0.f};  // the slot thread's loss and dlogits sums

  float x[R][CG][4];
  auto load_round = [&](size_t base) {
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
      const size_t row = base + i * teams + my_team;
#pragma unroll
      for (unsigned c = 0; c < CG; ++c) load4(a.a1 + row * H + 4 * (t + team * c), row < r1 ? n[c] : 0u, vec, x[i][c]);
    }
  };
  // Thread `slot` < slots applies the objective to its slot's row of every round; its inputs for
  // a round are loaded a round ahead.
  const bool slot_thread = threadIdx.x < slots;
  float b_out[kActions] = {0.f, 0.f, 0.f};
  if (slot_thread)
#pragma unroll
    for (int j = 0; j < kActions; ++j) b_out[j] = a.b_out[j];
  struct SlotIn {
    int32_t action = 0;
    float adv = 0.f, old_logp = 0.f;
  };
  const auto slot_in = [&](size_t base) {
    SlotIn in;
    const size_t row = base + threadIdx.x;
    if (slot_thread && row < r1) {
      in.action = a.actions[row];
      in.adv = a.adv[row];
      if (a.objective.old_logp) in.old_logp = a.objective.old_logp[row];
    }
    return in;
  };

  // Step 1 of the round at `base`, from x: h2 and gk into kept[par], the logits' shares into
  // team_logits[par].
  const auto step1 = [&](size_t base, unsigned par) {
    float4* mine = kept + size_t(par) * 2 * kKept * kThreads + threadIdx.x;
    float s[R][kActions];
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
      const size_t row = base + i * teams + my_team;
#pragma unroll
      for (int j = 0; j < kActions; ++j) s[i][j] = 0.f;
#pragma unroll
      for (unsigned c = 0; c < CG; ++c) {
        const unsigned live = row < r1 ? n[c] : 0u;
        float b[4], w[kActions][4], h[4], gk[4];
        unpack(bw[0][t + team * c], b);
#pragma unroll
        for (int j = 0; j < kActions; ++j) unpack(bw[1 + j][t + team * c], w[j]);
        const unsigned keep =
            live ? dropout_keep4(a.drop.p, a.drop.seed, a.drop.purpose, epoch, a.drop.step, uint32_t(row), t + team * c)
                 : 0u;
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) {
          float grad;
          const float g = gelu_and_grad(x[i][c][q] + b[q], grad);
          const bool is_kept = (keep >> q & 1u) && q < live;
          h[q] = is_kept ? g * scale : 0.f;
          gk[q] = is_kept ? grad * scale : 0.f;
#pragma unroll
          for (int j = 0; j < kActions; ++j) s[i][j] += h[q] * w[j][q];
        }
        mine[(i * CG + c) * kThreads] = make_float4(h[0], h[1], h[2], h[3]);
        mine[(kKept + i * CG + c) * kThreads] = make_float4(gk[0], gk[1], gk[2], gk[3]);
      }
    }
#pragma unroll
    for (unsigned i = 0; i < R; ++i)
#pragma unroll
      for (int j = 0; j < kActions; ++j) {
        const float v = warp_sum(s[i][j]);
        if (lane == 0) team_logits[par][i * teams + my_team][warp_in_team][j] = v;
      }
  };
  // Step 2, by the slot threads: the objective of their rows of the round at `base`.
  const auto objective = [&](size_t base, unsigned par, const SlotIn& in) {
    const unsigned slot = threadIdx.x;
    const size_t slot_row = base + slot;
    if (!slot_thread || slot_row >= r1) return;
    float z[kActions], dz[kActions], entropy;
#pragma unroll
    for (int j = 0; j < kActions; ++j) {
      float v = 0.f;
      for (unsigned wt = 0; wt < team / 32; ++wt) v += team_logits[par][slot][wt][j];
      z[j] = v + b_out[j];
    }
    part[0] += objective_loss(a.objective, z, in.action, in.adv, in.old_logp, inv_m, dz, &entropy);
#pragma unroll
    for (int j = 0; j < kActions; ++j) {
      a.logits[kActions * slot_row + j] = z[j];
      a.dlogits[kActions * slot_row + j] = dz[j];
      part[1 + j] += dz[j];
      slot_dz[par][slot][j] = dz[j];
    }
  };
  // Step 3 of the round at `base`.
  const auto step3 = [&](size_t base, unsigned par) {
    const float4* mine = kept + size_t(par) * 2 * kKept * kThreads + threadIdx.x;
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
      const unsigned slot = i * teams + my_team;
      const size_t row = base + slot;
      if (row >= r1) break;
      const float dz0 = slot_dz[par][slot][0], dz1 = slot_dz[par][slot][1], dz2 = slot_dz[par][slot][2];
#pragma unroll
      for (unsigned c = 0; c < CG; ++c) {
        if (n[c] == 0) continue;
        float w[kActions][4], h[4], gk[4], d[4];
#pragma unroll
        for (int j = 0; j < kActions; ++j) unpack(bw[1 + j][t + team * c], w[j]);
        unpack(mine[(i * CG + c) * kThreads], h);
        unpack(mine[(kKept + i * CG + c) * kThreads], gk);
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) {
          d[q] = (dz0 * w[0][q] + dz1 * w[1][q] + dz2 * w[2][q]) * gk[q];
          acc[c][0][q] += d[q];
          acc[c][1][q] += dz0 * h[q];
          acc[c][2][q] += dz1 * h[q];
          acc[c][3][q] += dz2 * h[q];
        }
        const size_t off = row * H + 4 * (t + team * c);
        if (a.da1_bf16)
          store4_bf16(a.da1_bf16 + off, n[c], vec, d);
        else
          store4(a.da1 + off, n[c], vec, d);
      }
    }
  };

  load_round(r0);
  SlotIn in;        // the slot thread's inputs for the round before `cur`
  __syncthreads();  // bw
  // Round `cur`'s step 1 beside the objective of the round before it (at cur - slots, of the
  // other parity), then the barrier, then that round's step 3; one pass past the last round.
  unsigned par = 0;  // cur's
  for (size_t cur = r0; cur < r1 + slots; cur += slots, par ^= 1u) {
    const bool after_first = cur > r0;
    if (after_first) objective(cur - slots, par ^ 1u, in);
    if (cur < r1) {
      in = slot_in(cur);
      step1(cur, par);
      if (cur + slots < r1) load_round(cur + slots);
    }
    __syncthreads();  // the round before's dlogits, this round's logits
    if (after_first) step3(cur - slots, par ^ 1u);
  }

  // The chunk's sums: the slots' row sums in slot order; each column's in team order.
  if (threadIdx.x < slots)
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q) slot_part[threadIdx.x][q] = part[q];
  const unsigned chunks = gridDim.x;
  if constexpr (CG == 1) {
    __shared__ float team_acc[kPartials * 4][kThreads];  // [sum * 4 + column of the group][thread]
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q)
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) team_acc[4 * q + k][threadIdx.x] = acc[0][q][k];
    __syncthreads();
    if (my_team == 0 && n[0] > 0) {
      for (unsigned q = 0; q < kPartials; ++q) {
        float v[4];
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
          v[k] = 0.f;
          for (unsigned tm = 0; tm < teams; ++tm) v[k] += team_acc[4 * q + k][tm * team + t];
        }
        store4(col_partials + (size_t(q) * chunks + blockIdx.x) * H + 4 * t, n[0], vec, v);
      }
    }
  } else {  // head_loss::one_pass gives CG = 2 one team: each column's sum is one thread's
    __syncthreads();
#pragma unroll
    for (unsigned c = 0; c < CG; ++c)
      if (n[c] > 0)
#pragma unroll
        for (unsigned q = 0; q < kPartials; ++q)
          store4(col_partials + (size_t(q) * chunks + blockIdx.x) * H + 4 * (t + team * c), n[c], vec, acc[c][q]);
  }
  if (threadIdx.x < kPartials) {
    float v = 0.f;
    for (unsigned sl = 0; sl < slots; ++sl) v += slot_part[sl][threadIdx.x];
    row_partials[size_t(blockIdx.x) * kPartials + threadIdx.x] = v;
  }
}

// The fused kernel's dynamic shared memory: each thread's h2 and gk of two rounds. With the static
// part it passes the 48 KB a block gets without asking (two blocks still fit an SM), so the
// kernel asks for it, once per device (the size is the instantiation's; not a stream operation:
// allowed while a stream captures).
template <unsigned CG, unsigned R>
void launch_fused(const HeadLossArgs& a, bool vec, unsigned team, unsigned chunks, unsigned rows, float* col_partials,
                  float* row_partials, cudaStream_t stream) {
  constexpr size_t kKeptBytes = 2 * 2 * size_t(R) * CG * kThreads * sizeof(float4);
  const auto kernel = head_loss_fused_kernel<CG, R>;
  static std::set<int> asked;  // the devices where this instantiation has its limit
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (!asked.count(dev)) {
    CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(kKeptBytes)));
    asked.insert(dev);
  }
  launch(kernel, chunks, kThreads, kKeptBytes, stream, a, vec, team, rows, col_partials, row_partials);
}

// The call's sums, in one launch. Blocks (x, y < 4): column sum y (g_b1, then g_w_out's three
// rows) of kThreads columns, the chunks added in order (colsum's second stage). Block (0, 4): the
// loss's mean and g_b_out from the row partials, added in double in a fixed tree.
__global__ void head_loss_finish_kernel(const float* __restrict__ col_partials, unsigned chunks,
                                        const float* __restrict__ row_partials, unsigned row_blocks, int M, int H,
                                        float* __restrict__ g_b1, float* __restrict__ g_w_out, float* __restrict__ loss,
                                        float* __restrict__ g_b_out) {
  if (blockIdx.y < kPartials) {
    const unsigned col = blockIdx.x * kThreads + threadIdx.x;
    if (col >= unsigned(H)) return;
    (blockIdx.y == 0 ? g_b1 : g_w_out + size_t(blockIdx.y - 1) * H)[col] =
        colsum::finish_column(col_partials + size_t(blockIdx.y) * chunks * H + col, chunks, H);
    return;
  }
  if (blockIdx.x != 0) return;  // the whole block: block_sum's barriers
  __shared__ double warp_sums[kWarps];
  double v[kPartials] = {0.0, 0.0, 0.0, 0.0};
  for (unsigned i = threadIdx.x; i < row_blocks; i += kThreads)
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q) v[q] += row_partials[size_t(i) * kPartials + q];
#pragma unroll
  for (unsigned q = 0; q < kPartials; ++q) v[q] = block_sum<kThreads>(v[q], warp_sums);
  if (threadIdx.x == 0) {
    *loss = static_cast<float>(v[0] / M);
#pragma unroll
    for (int j = 0; j < kActions; ++j) g_b_out[j] = static_cast<float>(v[1 + j]);
  }
}

}  // namespace

// Bytes per call, one pass: a1 read once (4MH), da1 written (4MH, 2MH in bf16), 24M of logits
// and dlogits, and 16 * chunks * H bytes of column sums written and read again (chunks <= 256).
void head_loss_cuda(const HeadLossArgs& a, cudaStream_t stream) {
  check_dropout(a.drop, "head_loss_cuda");
  if (a.M < 1 || a.H < 1)
    throw std::invalid_argument("head_loss_cuda: M and H must be >= 1, got M " + std::to_string(a.M) + ", H " +
                                std::to_string(a.H));
  const unsigned chunks = colsum::chunks(size_t(a.M));
  float* col_partials = a.scratch;
  float* row_partials = a.scratch + 4 * size_t(chunks) * size_t(a.H);
  const bool vec = a.H % 4 == 0 && aligned16(a.a1) && aligned16(a.b1) && aligned16(a.w_out) && aligned16(a.da1) &&
                   aligned16(col_partials) && (a.da1_bf16 == nullptr || aligned8(a.da1_bf16));
  unsigned row_blocks = chunks;
  const head_loss::OnePass shape = head_loss::one_pass(a.H);
  const unsigned rows = colsum::rows_per_chunk(size_t(a.M));
  if (shape.groups_per_thread == 1)
    launch_fused<1, 2>(a, vec, shape.team, chunks, rows, col_partials, row_partials, stream);
  else if (shape.groups_per_thread == 2)
    launch_fused<2, 1>(a, vec, shape.team, chunks, rows, col_partials, row_partials, stream);
  else
    row_blocks = head_loss_wide_cuda(a, vec, col_partials, row_partials, stream);
  launch(head_loss_finish_kernel, dim3(ceil_div(size_t(a.H), kThreads), kPartials + 1), kThreads, 0, stream,
         static_cast<const float*>(col_partials), chunks, static_cast<const float*>(row_partials), row_blocks, a.M, a.H,
         a.g_b1, a.g_w_out, a.loss, a.g_b_out);
}

}  // namespace grpo
