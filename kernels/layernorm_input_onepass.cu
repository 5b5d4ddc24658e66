// The LayerNorm input backward in one pass over dh1, h0 recomputed (layernorm_input_onepass.h).
#include "core/exact_math.h"
#include "core/grid_dependency.cuh"
#include "kernels/layernorm_input_onepass.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "kernels/activations_colsum.h"
#include "kernels/activations_vec.cuh"
#include "kernels/fc_in.h"
#include "kernels/gelu.h"
#include "kernels/reduce_block.h"

namespace grpo::layernorm_onepass {

namespace {

constexpr unsigned kWarps = kThreads / 32;
constexpr int kSums = 2 + kMaxD;

struct Args {
  const float *dh1, *X, *W_in, *gamma, *mean, *rstd;
  int M, N, D;
  bool vec;       // float4 access to dh1, gamma and partial
  float* h0_out;  // kH0Out: the recomputed h0 goes here too (tests)
};

// Rows a team takes a round: two where D is exactly kMaxD (the presets'), which halves the round's
// fixed part per row: the loop, the prefetch's address arithmetic, the shuffles of the row sums,
// the barrier and the adding of the warps' shares, and each W_in group's
// shared-memory load serves both rows. More do not fit: a row in flight keeps 12 floats a thread
// through the barriers (dh1, gelu', xhat) and 4 more for the next round's dh1, beside the 48
// column sums. With D a run-time value (its bounds tested at each d) two rows spill: one.
template <bool kExactD>
constexpr unsigned kRowsOf = kExactD ? 2 : 1;
constexpr unsigned kSlots = 2 * kWarps;  // a round's rows: up to two of at most 16 teams
constexpr unsigned kRowIn = 12;          // floats of a staged row: x[0 .. kMaxD), 0 to 10, mean, rstd
static_assert(kMaxD <= 10 && kRowIn % 4 == 0, "a staged row is three float4s");
static_assert(kRowsOf<true> * kWarps <= kSlots && kSlots * kRowIn <= kThreads,
              "a thread stages each element of a round");

// A block per row chunk of colsum's partition (activations_colsum.h). Its 512 threads form teams
// of `team` threads; thread t of a team owns the four columns 4t .. 4t + 3 of every row it sees,
// so its 2 + D column sums (dgamma, dbeta, dW_in's D columns) stay in its registers for the whole
// chunk. W_in at those columns waits in shared memory. A round takes kRowsOf rows a team (slot
// s = i * teams + team index is row base + s), so a team still sees its rows in ascending order:
//   1. h0 = X W_in^T at the thread's columns, as the rollout's fused step computes it (an fmaf
//      chain over d ascending from 0, so the same bits), then gelu, gelu', xhat = (gelu(h0) -
//      mean) rstd and the thread's shares of the row sums of dxhat = dh1 gamma and dxhat xhat;
//   2. the rows' sums meet in shared memory (a shuffle tree a warp, all the round's sums at once),
//      and after the round's one barrier every warp adds its team's warps' sums in order (a lane
//      a sum) into its rows' two means;
//   3. dh0 = dh1 + gelu'(h0) rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) joins the column
//      sums with dh1 xhat, dh1 and dh0 X[row, d], the rows in order.
// dh1 is the only [M, N] array read, once; h0 is never read and dh0 never written. Its loads run a
// round ahead. A row's observation and statistics are read from global memory by one thread each
// (12 a row) a round ahead, and wait in shared memory, where every thread of the team reads them.
template <bool kExactD, bool kH0Out>
__global__ void __launch_bounds__(kThreads, 1)
    layernorm_input_onepass_kernel(Args a, unsigned team, unsigned rows_per_chunk, float* __restrict__ partial) {
  constexpr unsigned kRows = kRowsOf<kExactD>;
  follow_previous_kernel();
  __shared__ float warp_sums[2][kWarps][2 * kRows];  // [round parity][warp of the block][2 i + sum]: a team's warps
                                                     // are contiguous
  __shared__ float4 rows_in[3][kSlots][kRowIn / 4];  // [round % 3][slot]: the staged rows
  __shared__ float4 team_cols[kThreads];             // the chunk's end: one column sum, the teams' in order
  GRPO_DYNAMIC_SHARED(float4, w_in);                 // [d * team + t]: W_in[4t .. 4t + 3, d]
  const unsigned teams = kThreads / team, my_team = threadIdx.x / team, t = threadIdx.x % team;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps_per_team = team / 32;
  const unsigned N = unsigned(a.N), D = kExactD ? unsigned(kMaxD) : unsigned(a.D);
  const unsigned n = 4 * t < N ? std::min(4u, N - 4 * t) : 0u;  // the thread's valid columns
  const unsigned slots = kRows * teams;
  const size_t r0 = size_t(blockIdx.x) * rows_per_chunk;
  const size_t r1 = std::min(size_t(a.M), r0 + rows_per_chunk);

  for (unsigned i = threadIdx.x; i < D * team; i += kThreads) {
    const unsigned d = i / team, g = i % team;
    float w[4];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) w[k] = 4 * g + k < N ? a.W_in[size_t(4 * g + k) * D + d] : 0.f;
    w_in[i] = make_float4(w[0], w[1], w[2], w[3]);
  }
  float ga[4];
  load4(a.gamma + 4 * t, n, a.vec, ga);
  float acc[kSums][4];
#pragma unroll
  for (int q = 0; q < kSums; ++q)
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) acc[q][k] = 0.f;

  // The staging: thread j < slots * kRowIn reads element j % kRowIn of slot j / kRowIn's row (0
  // past D, and for a row past the chunk).
  const bool stager = threadIdx.x < slots * kRowIn;
  const unsigned stage_slot = threadIdx.x / kRowIn, stage_e = threadIdx.x % kRowIn;
  auto stage_load = [&](size_t base) {
    const size_t row = base + stage_slot;
    if (!stager || row >= r1) return 0.f;
    if (stage_e < D) return a.X[row * D + stage_e];
    return stage_e == kRowIn - 2 ? a.mean[row] : stage_e == kRowIn - 1 ? a.rstd[row] : 0.f;
  };
  auto stage_store = [&](unsigned ring, float v) {
    if (stager) reinterpret_cast<float*>(rows_in[ring][stage_slot])[stage_e] = v;
  };
  auto load_dy = [&](size_t base, float(&dy)[kRows][4]) {
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i) {
      const size_t row = base + i * teams + my_team;
      load4(a.dh1 + row * N + 4 * t, row < r1 ? n : 0u, a.vec, dy[i]);
    }
  };
  auto row_in = [&](unsigned ring, unsigned slot, float(&x)[kRowIn]) {
#pragma unroll
    for (unsigned q = 0; q < kRowIn / 4; ++q) {
      const float4 v = rows_in[ring][slot][q];
      x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
    }
  };
  float dy[kRows][4], dy_next[kRows][4];
  load_dy(r0, dy);
  stage_store(0, stage_load(r0));
  stage_store(1, stage_load(r0 + slots));
  __syncthreads();  // w_in, rounds 0 and 1's rows

  // One barrier a round: after it every warp adds its team's warps' sums itself, where one
  // thread a slot did between two barriers. Round k's sums take warp_sums[k & 1] (a warp may
  // write round k + 1's while another still reads round k's), and its rows rows_in[k % 3]:
  // round k + 2's are stored after barrier k, once round k - 1's step 3 has read its rows, and
  // are read after barrier k + 1.
  unsigned parity = 0, ring = 0;
  for (size_t base = r0; base < r1; base += slots, parity ^= 1u, ring = ring == 2 ? 0 : ring + 1) {
    float h[kRows][4];
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i)
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) h[i][k] = 0.f;
    float in[kRows][kRowIn];
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i) row_in(ring, i * teams + my_team, in[i]);
#pragma unroll
    for (unsigned d = 0; d < unsigned(kMaxD); ++d) {
      if (!kExactD && d >= D) break;
      const float4 w = w_in[d * team + t];
#pragma unroll
      for (unsigned i = 0; i < kRows; ++i) fc_in_add4(in[i][d], w, h[i]);
    }
    float dg[kRows][4], xhat[kRows][4], sums[2 * kRows];  // dy = 0 past the row's end and past the chunk
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i) {
      const size_t row = base + i * teams + my_team;
      if (kH0Out && row < r1 && n > 0) store4(a.h0_out + row * N + 4 * t, n, false, h[i]);
      const float mu = in[i][kRowIn - 2], rs = in[i][kRowIn - 1];
      float s1 = 0.f, s2 = 0.f;
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) {
        xhat[i][k] = (gelu_and_grad(h[i][k], dg[i][k]) - mu) * rs;
        const float dxhat = mul_rn(dy[i][k], ga[k]);  // rounded, as one row a round had it: nvcc would fuse it into s1
        s1 += dxhat;
        s2 += dxhat * xhat[i][k];
      }
      sums[2 * i] = s1, sums[2 * i + 1] = s2;
    }
    const size_t next = base + slots;
    load_dy(next, dy_next);

    {  // the round's row sums over the warp at once: sum x in lanes x L ..
      constexpr unsigned L = kSpreadLanes<2 * kRows>;
      const float v = warp_sums_spread(sums);
      if (lane % L == 0) warp_sums[parity][warp][lane / L] = v;
    }
    __syncthreads();
    const float staged = stage_load(next + slots);  // round k + 2's, stored after step 3
    // The means of the team's rows: lane j < 2 kRows adds sum j over the team's warps in order and
    // divides, as one thread a slot did; the warp's lanes take them by shuffles.
    float means[2 * kRows];
    {
      const unsigned w0 = my_team * warps_per_team;
      float m = 0.f;
      if (lane < 2 * kRows) {
        m = warp_sums[parity][w0][lane];
        for (unsigned w = 1; w < warps_per_team; ++w) m += warp_sums[parity][w0 + w][lane];
        m = m / float(N);
      }
#pragma unroll
      for (unsigned j = 0; j < 2 * kRows; ++j) means[j] = __shfl_sync(0xffffffffu, m, j);
    }
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i) {
      const unsigned slot = i * teams + my_team;
      if (base + slot >= r1) break;  // uniform over the team; the barrier above is the block's
      const float m1 = means[2 * i], m2 = means[2 * i + 1];
      float x[kRowIn];
      row_in(ring, slot, x);
      const float rs = x[kRowIn - 1];
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) {
        const float d0 = dy[i][k] + dg[i][k] * (rs * (dy[i][k] * ga[k] - m1 - xhat[i][k] * m2));
        acc[0][k] += dy[i][k] * xhat[i][k];
        acc[1][k] += dy[i][k];
#pragma unroll
        for (unsigned d = 0; d < unsigned(kMaxD); ++d)
          if (kExactD || d < D) acc[2 + d][k] += d0 * x[d];
      }
    }
    stage_store(ring == 0 ? 2 : ring - 1, staged);  // (k + 2) % 3
#pragma unroll
    for (unsigned i = 0; i < kRows; ++i)
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) dy[i][k] = dy_next[i][k];
  }

  // The chunk's column sums, each column's teams added in team order.
  const unsigned chunks = gridDim.x;
#pragma unroll
  for (unsigned q = 0; q < unsigned(kSums); ++q) {
    if (q >= 2 + D) break;
    float* out = partial + (size_t(q) * chunks + blockIdx.x) * N + 4 * t;
    if (teams == 1) {
      if (n > 0) store4(out, n, a.vec, acc[q]);
      continue;
    }
    team_cols[threadIdx.x] = make_float4(acc[q][0], acc[q][1], acc[q][2], acc[q][3]);
    __syncthreads();
    if (my_team == 0 && n > 0) {
      float v[4] = {acc[q][0], acc[q][1], acc[q][2], acc[q][3]};
      for (unsigned tm = 1; tm < teams; ++tm) {
        const float4 o = team_cols[tm * team + t];
        v[0] += o.x, v[1] += o.y, v[2] += o.z, v[3] += o.w;
      }
      store4(out, n, a.vec, v);
    }
    __syncthreads();
  }
}

constexpr size_t kSmemLimit = size_t(kMaxD) * kThreads * sizeof(float4);

size_t dynamic_bytes(int N, int D) { return size_t(D) * team(N) * sizeof(float4); }

const void* const kKernels[] = {reinterpret_cast<const void*>(&layernorm_input_onepass_kernel<true, false>),
                                reinterpret_cast<const void*>(&layernorm_input_onepass_kernel<true, true>),
                                reinterpret_cast<const void*>(&layernorm_input_onepass_kernel<false, false>),
                                reinterpret_cast<const void*>(&layernorm_input_onepass_kernel<false, true>)};

// The dynamic shared memory the kernels may ask for on the current device: kSmemLimit, or what the
// device's opt-in limit leaves beside their static part. Always the same on a device, so that a
// later launch never lowers the limit below what a captured graph's node asks for; set once per
// device (not a stream operation: allowed while a stream captures).
size_t dynamic_limit() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static std::map<int, size_t> limits;
  if (const auto it = limits.find(dev); it != limits.end()) return it->second;
  int optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  size_t fixed = 0;
  for (const void* k : kKernels) {
    cudaFuncAttributes f{};
    CUDA_CHECK(cudaFuncGetAttributes(&f, k));
    fixed = std::max(fixed, f.sharedSizeBytes);
  }
  const size_t limit = std::min(kSmemLimit, size_t(std::max(optin, 0)) > fixed ? size_t(optin) - fixed : 0);
  for (const void* k : kKernels)
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)));
  return limits.emplace(dev, limit).first->second;
}

template <bool kExactD, bool kH0Out>
void launch_onepass(const Args& a, unsigned tm, size_t smem, unsigned chunks, unsigned rows, float* partial,
                    cudaStream_t stream) {
  launch_overlapped(layernorm_input_onepass_kernel<kExactD, kH0Out>, chunks, kThreads, smem, stream, a, tm, rows,
                    partial);
}

}  // namespace

bool fits_device(int N, int D) {
  return N >= 1 && N <= kMaxN && D >= 1 && D <= kMaxD && dynamic_bytes(N, D) <= dynamic_limit();
}

// Moves 4*M*N bytes of dh1, (2 + D) * 4 * chunks * N of partial sums, and 4*M*(D + 2) of
// observations and statistics; W_in and gamma once a block, from L2.
void partial_sums_cuda(const float* dh1, const float* X, const float* W_in, const float* gamma, const float* mean,
                       const float* rstd, int M, int N, int D, float* partial, cudaStream_t stream, float* h0_out) {
  if (M < 0 || N < 1 || N > kMaxN || D < 1 || D > kMaxD)
    throw std::invalid_argument("layernorm_onepass::partial_sums_cuda: needs M >= 0, 1 <= N <= " +
                                std::to_string(kMaxN) + " and 1 <= D <= " + std::to_string(kMaxD) + ", got M " +
                                std::to_string(M) + ", N " + std::to_string(N) + ", D " + std::to_string(D));
  const unsigned tm = team(N);
  const Args a{dh1,   X, W_in, gamma, mean,
               rstd,  M, N,    D,     N % 4 == 0 && aligned16(dh1) && aligned16(gamma) && aligned16(partial),
               h0_out};
  const size_t smem = dynamic_bytes(N, D);
  if (smem > dynamic_limit())
    throw std::invalid_argument("layernorm_onepass::partial_sums_cuda: N " + std::to_string(N) + ", D " +
                                std::to_string(D) + " needs " + std::to_string(smem) +
                                " bytes of shared memory a block beside its static part; the device allows " +
                                std::to_string(dynamic_limit()) + " (fits_device says where it runs)");
  const unsigned chunks = colsum::chunks(size_t(M)), rows = colsum::rows_per_chunk(size_t(M));
  const bool exact = D == kMaxD;  // the presets' D: two rows a round
  if (h0_out)
    exact ? launch_onepass<true, true>(a, tm, smem, chunks, rows, partial, stream)
          : launch_onepass<false, true>(a, tm, smem, chunks, rows, partial, stream);
  else
    exact ? launch_onepass<true, false>(a, tm, smem, chunks, rows, partial, stream)
          : launch_onepass<false, false>(a, tm, smem, chunks, rows, partial, stream);
}

}  // namespace grpo::layernorm_onepass
