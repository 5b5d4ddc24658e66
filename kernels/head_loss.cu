// The loss pass's policy head in one pass over the rows (contract in head_loss.h).
#include <set>
#include <stdexcept>
#include <string>

#include "core/exact_math.h"
#include "core/grid_dependency.cuh"
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
// `team` threads (a power of two, 32 to 256), each team rows of its own; thread t of a team owns
// the CG column groups t, t + team, ... (four columns each) of every row it sees, so its four
// column sums stay in its registers (b1 and W_out at the block's columns wait in shared memory).
// A round takes R = 2 rows a team (slot s = i * teams + team index is row base + s). A round:
//   1. g = gelu(a1 + b1) and gk = gelu' where dropout keeps the element (0 where it drops it),
//      kept in the thread's own part of a shared-memory ring, and the thread's share of the
//      three logits' sums g W_out;
//   2. the logits meet in shared memory (a shuffle tree a warp, then the team's warps in order),
//      are scaled by 1 / (1 - p) and biased, and one thread a slot applies the objective (loss,
//      dlogits);
//   3. da1 = (dlogits W_out) * gk / (1 - p) is written, and da1 and dlogits_j * h2 join the
//      column sums. The 1 / (1 - p) goes into the row's three dlogits, not into each element's
//      h2 = g / (1 - p) and gelu' / (1 - p): two multiplications an element fewer.
// The rounds overlap with one barrier each: after barrier k the slot threads run round k's step
// 2 while every thread runs round k - 1's step 3 and round k + 1's step 1, so the objective's
// serial part no longer holds the block at a barrier of its own. Round k's logits and dlogits
// take the buffers of parity k & 1, and each thread keeps two rounds' g and gk (the one step 2
// is on, the one step 1 writes while step 3 reads the round before from the same place). The
// same operations in the same order as one round at a time with two barriers: the same bits.
// a1 is read once and the GELU and the mask are computed once an element: the two passes of
// head_loss_wide.cu each read a1 and compute both. The next round's a1 loads are issued right
// after step 1, so they are in flight through the barrier and steps 2 and 3.
template <unsigned CG, unsigned R>
constexpr unsigned kRingFloats = 2 * R* CG * 4;  // a round's g and gk, a thread's

template <unsigned CG, unsigned R>
constexpr size_t ring_bytes() {
  return size_t(2) * kRingFloats<CG, R> * kThreads * sizeof(float);  // two rounds
}

template <unsigned CG, unsigned R>
__global__ void __launch_bounds__(kThreads, 2)
    head_loss_fused_kernel(HeadLossArgs a, bool vec, unsigned team, unsigned rows_per_chunk,
                           float* __restrict__ col_partials, float* __restrict__ row_partials) {
  follow_previous_kernel();
  constexpr unsigned kMaxSlots = R * kWarps;                     // teams * R, at most 8 teams of 32
  __shared__ float team_logits[2][kMaxSlots][kWarps][kActions];  // [round parity][slot][warp of the team][j]
  __shared__ float slot_dz[2][kMaxSlots][kActions];              // [round parity][slot][j]
  __shared__ float slot_part[kMaxSlots][kPartials];
  GRPO_DYNAMIC_SHARED(float, ring);  // [round parity][element][thread]: each thread's g and gk
  const unsigned teams = kThreads / team, my_team = threadIdx.x / team, t = threadIdx.x % team;
  const unsigned lane = threadIdx.x % 32, warp_in_team = t / 32, slots = teams * R;
  const unsigned H = unsigned(a.H), groups = (H + 3) / 4;
  const uint32_t epoch = a.drop.p > 0.f ? *a.drop.epoch : 0u;
  const float scale = dropout_scale(a.drop.p);
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
  // Element e of the thread's g (e < kRingFloats / 2) and gk (the half after) in the round of
  // parity par: a thread's own, so a round's write and the round before's read need no barrier.
  const auto ring_at = [&](unsigned par, unsigned e) -> float& {
    return ring[(size_t(par) * kRingFloats<CG, R> + e) * kThreads + threadIdx.x];
  };
  constexpr unsigned kGk = kRingFloats<CG, R> / 2;
  load_round(r0);
  // Thread `slot` < slots applies the objective to its slot's row of every round; its inputs for
  // a round are loaded with the round's step 1, so that they have arrived by step 2.
  const bool slot_thread = threadIdx.x < slots;
  int32_t action = 0;
  float adv = 0.f, old_logp = 0.f;
  const auto slot_inputs = [&](size_t base) {
    const size_t slot_row = base + threadIdx.x;
    if (slot_thread && slot_row < r1) {
      action = a.actions[slot_row];
      adv = a.adv[slot_row];
      if (a.objective.old_logp) old_logp = a.objective.old_logp[slot_row];
    }
  };
  // b_out, and 1 / M for the objective: in shared memory, where a register held over the rounds
  // spilled at two groups a thread.
  __shared__ float b_out[kActions], inv_m;
  if (threadIdx.x < unsigned(kActions)) b_out[threadIdx.x] = a.b_out[threadIdx.x];
  if (threadIdx.x == 0) inv_m = 1.f / static_cast<float>(a.M);

  const auto step1 = [&](size_t base, unsigned par) {
    float s[R][kActions];
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
      const size_t row = base + i * teams + my_team;
#pragma unroll
      for (int j = 0; j < kActions; ++j) s[i][j] = 0.f;
#pragma unroll
      for (unsigned c = 0; c < CG; ++c) {
        const unsigned live = row < r1 ? n[c] : 0u;
        float b[4], w[kActions][4];
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
          const bool kept = (keep >> q & 1u) && q < live;
          const float h = kept ? g : 0.f;
          ring_at(par, (i * CG + c) * 4 + q) = h;
          ring_at(par, kGk + (i * CG + c) * 4 + q) = kept ? grad : 0.f;
#pragma unroll
          for (int j = 0; j < kActions; ++j) s[i][j] += h * w[j][q];
        }
      }
    }
    if (base + slots < r1) load_round(base + slots);

    {  // the warp's shares of the R rows' logits, summed at once: logit x of the round in lanes x L..
      constexpr unsigned V = R * kActions, L = kSpreadLanes<V>;
      float flat[V];
#pragma unroll
      for (unsigned i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < kActions; ++j) flat[i * kActions + j] = s[i][j];
      const float v = warp_sums_spread(flat);
      const unsigned x = lane / L;
      if (lane % L == 0 && x < V) team_logits[par][x / kActions * teams + my_team][warp_in_team][x % kActions] = v;
    }
  };

  const auto step2 = [&](size_t base, unsigned par) {
    const size_t slot_row = base + threadIdx.x;
    if (!slot_thread || slot_row >= r1) return;
    const unsigned slot = threadIdx.x;
    float z[kActions], dz[kActions], entropy;
#pragma unroll
    for (int j = 0; j < kActions; ++j) {
      float v = 0.f;
      for (unsigned wt = 0; wt < team / 32; ++wt) v += team_logits[par][slot][wt][j];
      // A product then a sum, as the host twin and the emulator add: with b_out in shared memory
      // nvcc would fuse them.
      z[j] = mul_rn(v, scale) + b_out[j];
    }
    part[0] += objective_loss(a.objective, z, action, adv, old_logp, inv_m, dz, &entropy);
#pragma unroll
    for (int j = 0; j < kActions; ++j) {
      a.logits[kActions * slot_row + j] = z[j];
      a.dlogits[kActions * slot_row + j] = dz[j];
      part[1 + j] += dz[j];
      slot_dz[par][slot][j] = dz[j] * scale;  // step 3's h and gk are unscaled
    }
  };

  const auto step3 = [&](size_t base, unsigned par) {
#pragma unroll
    for (unsigned i = 0; i < R; ++i) {
      const unsigned slot = i * teams + my_team;
      const size_t row = base + slot;
      if (row >= r1) break;
      const float dz0 = slot_dz[par][slot][0], dz1 = slot_dz[par][slot][1], dz2 = slot_dz[par][slot][2];
#pragma unroll
      for (unsigned c = 0; c < CG; ++c) {
        if (n[c] == 0) continue;
        float w[kActions][4], d[4];
#pragma unroll
        for (int j = 0; j < kActions; ++j) unpack(bw[1 + j][t + team * c], w[j]);
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) {
          const float h = ring_at(par, (i * CG + c) * 4 + q), gk = ring_at(par, kGk + (i * CG + c) * 4 + q);
          d[q] = (dz0 * w[0][q] + dz1 * w[1][q] + dz2 * w[2][q]) * gk;
          acc[c][0][q] += d[q];
          acc[c][1][q] += dz0 * h;
          acc[c][2][q] += dz1 * h;
          acc[c][3][q] += dz2 * h;
        }
        const size_t off = row * H + 4 * (t + team * c);
        if (a.da1_bf16)
          store4_bf16(a.da1_bf16 + off, n[c], vec, d);
        else
          store4(a.da1 + off, n[c], vec, d);
      }
    }
  };

  __syncthreads();  // bw, b_out, inv_m
  if (r0 < r1) {
    slot_inputs(r0);
    step1(r0, 0);
  }
  unsigned par = 0;
  size_t last = r0;
  for (size_t base = r0; base < r1; base += slots, par ^= 1u) {
    // Round k's logits are whole (team_logits[par]) and round k - 1's dz (slot_dz[par ^ 1]);
    // round k - 1's step 2 read team_logits[par ^ 1] before it, and round k - 2's step 3
    // slot_dz[par], which round k + 1's step 1 and round k's step 2 now write.
    __syncthreads();
    step2(base, par);
    if (base > r0) step3(base - slots, par ^ 1u);
    if (base + slots < r1) {
      slot_inputs(base + slots);
      step1(base + slots, par ^ 1u);
    }
    last = base;
  }
  if (r0 < r1) {
    __syncthreads();  // the last round's dz
    step3(last, par ^ 1u);
  }

  // The chunk's sums: the slots' row sums in slot order; each column's in team order.
  if (threadIdx.x < slots)
#pragma unroll
    for (unsigned q = 0; q < kPartials; ++q) slot_part[threadIdx.x][q] = part[q];
  const unsigned chunks = gridDim.x;
  __syncthreads();   // slot_part; and bw, read for the last time by the last round, becomes team_acc
  if (teams == 1) {  // each column's sum is one thread's
#pragma unroll
    for (unsigned c = 0; c < CG; ++c)
      if (n[c] > 0)
#pragma unroll
        for (unsigned q = 0; q < kPartials; ++q)
          store4(col_partials + (size_t(q) * chunks + blockIdx.x) * H + 4 * (t + team * c), n[c], vec, acc[c][q]);
  } else {  // a group at a time, the teams' sums added in team order by team 0
    static_assert(sizeof bw >= sizeof(float) * kPartials * 4 * kThreads, "team_acc fits in bw");
    float(*team_acc)[kThreads] = reinterpret_cast<float(*)[kThreads]>(&bw[0][0]);  // [sum * 4 + column][thread]
#pragma unroll
    for (unsigned c = 0; c < CG; ++c) {
      if (c > 0) __syncthreads();  // team 0 has read the group before
#pragma unroll
      for (unsigned q = 0; q < kPartials; ++q)
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) team_acc[4 * q + k][threadIdx.x] = acc[c][q][k];
      __syncthreads();
      if (my_team == 0 && n[c] > 0) {
        for (unsigned q = 0; q < kPartials; ++q) {
          float v[4];
#pragma unroll
          for (unsigned k = 0; k < 4; ++k) {
            v[k] = 0.f;
            for (unsigned tm = 0; tm < teams; ++tm) v[k] += team_acc[4 * q + k][tm * team + t];
          }
          store4(col_partials + (size_t(q) * chunks + blockIdx.x) * H + 4 * (t + team * c), n[c], vec, v);
        }
      }
    }
  }
  if (threadIdx.x < kPartials) {
    float v = 0.f;
    for (unsigned sl = 0; sl < slots; ++sl) v += slot_part[sl][threadIdx.x];
    row_partials[size_t(blockIdx.x) * kPartials + threadIdx.x] = v;
  }
}

// The call's sums, in one launch. Blocks (x, y < 4): column sum y (g_b1, then g_w_out's three
// rows) of kThreads columns, the chunks added in order (colsum's second stage). Block (0, 4): the
// loss's mean and g_b_out from the row partials, added in double in a fixed tree.
__global__ void head_loss_finish_kernel(const float* __restrict__ col_partials, unsigned chunks,
                                        const float* __restrict__ row_partials, unsigned row_blocks, int M, int H,
                                        float* __restrict__ g_b1, float* __restrict__ g_w_out, float* __restrict__ loss,
                                        float* __restrict__ g_b_out) {
  follow_previous_kernel();
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

// The fused kernel's dynamic shared memory (its ring), allowed once per device for the kernel
// (not a stream operation: allowed while a stream captures).
template <unsigned CG, unsigned R>
size_t fused_smem() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static std::set<int> allowed;
  if (allowed.count(dev) == 0) {
    CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&head_loss_fused_kernel<CG, R>),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(ring_bytes<CG, R>())));
    allowed.insert(dev);
  }
  return ring_bytes<CG, R>();
}

}  // namespace

// Bytes per call, one pass: a1 read once (4MH), da1 written (4MH, 2MH in bf16), 24M of logits
// and dlogits, and 16 * chunks * H bytes of column sums written and read again (chunks <= colsum::kMaxChunks).
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
    launch_overlapped(head_loss_fused_kernel<1, 2>, chunks, kThreads, fused_smem<1, 2>(), stream, a, vec, shape.team,
                      rows, col_partials, row_partials);
  else if (shape.groups_per_thread == 2)
    launch_overlapped(head_loss_fused_kernel<2, 2>, chunks, kThreads, fused_smem<2, 2>(), stream, a, vec, shape.team,
                      rows, col_partials, row_partials);
  else
    row_blocks = head_loss_wide_cuda(a, vec, col_partials, row_partials, stream);
  launch_overlapped(head_loss_finish_kernel, dim3(ceil_div(size_t(a.H), kThreads), kPartials + 1), kThreads, 0, stream,
                    static_cast<const float*>(col_partials), chunks, static_cast<const float*>(row_partials),
                    row_blocks, a.M, a.H, a.g_b1, a.g_w_out, a.loss, a.g_b_out);
}

}  // namespace grpo
