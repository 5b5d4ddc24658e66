// The LayerNorm input backward in one pass over dh1, h0 recomputed (layernorm_input_onepass.h).
#include "core/grid_dependency.cuh"
#include "kernels/layernorm_input_onepass.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "core/launch.h"
#include "core/vector_access.h"
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

// What a thread reads of one row besides dh1: the observation and the forward's statistics.
struct RowIn {
  float x[kMaxD], mu, rs;
};

// A block per row chunk of colsum's partition (activations_colsum.h). Its 512 threads form teams
// of `team` threads, each team a row at a time; thread t of a team owns the four columns
// 4t .. 4t + 3 of every row it sees, so its 2 + D column sums (dgamma, dbeta, dW_in's D columns)
// stay in its registers for the whole chunk. W_in at those columns waits in shared memory. A round:
//   1. h0 = X W_in^T at the thread's columns, as the rollout's fused step computes it (an fmaf
//      chain over d ascending from 0, so the same bits), then gelu, gelu', xhat = (gelu(h0) -
//      mean) rstd and the thread's shares of the row sums of dxhat = dh1 gamma and dxhat xhat;
//   2. the row sums meet in shared memory (a shuffle tree a warp, then the team's warps in order,
//      by one thread a team), and every thread of the team reads the row's two means;
//   3. dh0 = dh1 + gelu'(h0) rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) joins the column
//      sums with dh1 xhat, dh1 and dh0 X[row, d].
// dh1 is the only [M, N] array read, once; h0 is never read and dh0 never written. Its loads run
// two rounds ahead, the observation's and the statistics' one round ahead.
template <bool kExactD, bool kH0Out>
__global__ void __launch_bounds__(kThreads, 1)
    layernorm_input_onepass_kernel(Args a, unsigned team, unsigned rows_per_chunk, float* __restrict__ partial) {
  follow_previous_kernel();
  __shared__ float warp_sums[kWarps][2];  // [warp of the block][sum]: a team's warps are contiguous
  __shared__ float row_means[kWarps][2];  // [team][mean of dxhat, of dxhat xhat]; at most 16 teams
  __shared__ float4 team_cols[kThreads];  // the chunk's end: one column sum, the teams' in order
  GRPO_DYNAMIC_SHARED(float4, w_in);      // [d * team + t]: W_in[4t .. 4t + 3, d]
  const unsigned teams = kThreads / team, my_team = threadIdx.x / team, t = threadIdx.x % team;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps_per_team = team / 32;
  const unsigned N = unsigned(a.N), D = kExactD ? unsigned(kMaxD) : unsigned(a.D);
  const unsigned n = 4 * t < N ? std::min(4u, N - 4 * t) : 0u;  // the thread's valid columns
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

  auto load_dy = [&](size_t row, float(&dy)[4]) { load4(a.dh1 + row * N + 4 * t, row < r1 ? n : 0u, a.vec, dy); };
  auto load_in = [&](size_t row, RowIn& in) {
    const bool live = row < r1;
    const float* xr = a.X + row * D;
    if constexpr (kExactD) {  // rows of 10 floats from an 8-byte aligned X: five 8-byte loads
      static_assert(kMaxD % 2 == 0, "pairs of inputs");
#pragma unroll
      for (unsigned d = 0; d < unsigned(kMaxD); d += 2) {
        const float2 v = live ? *vector_at<const float2>(xr + d) : make_float2(0.f, 0.f);
        in.x[d] = v.x, in.x[d + 1] = v.y;
      }
    } else {
#pragma unroll
      for (unsigned d = 0; d < unsigned(kMaxD); ++d) in.x[d] = live && d < D ? xr[d] : 0.f;
    }
    in.mu = live ? a.mean[row] : 0.f;
    in.rs = live ? a.rstd[row] : 0.f;
  };
  float dy[4], dy_next[4];
  RowIn in;
  load_dy(r0 + my_team, dy);
  load_dy(r0 + teams + my_team, dy_next);
  load_in(r0 + my_team, in);
  __syncthreads();  // w_in

  for (size_t base = r0; base < r1; base += teams) {
    const size_t row = base + my_team;
    float h[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (unsigned d = 0; d < unsigned(kMaxD); ++d) {
      if (!kExactD && d >= D) break;
      fc_in_add4(in.x[d], w_in[d * team + t], h);
    }
    if (kH0Out && row < r1 && n > 0) store4(a.h0_out + row * N + 4 * t, n, false, h);
    float dg[4], xhat[4], s1 = 0.f, s2 = 0.f;  // dy = 0 past the row's end and past the chunk
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      xhat[k] = (gelu_and_grad(h[k], dg[k]) - in.mu) * in.rs;
      const float dxhat = dy[k] * ga[k];
      s1 += dxhat;
      s2 += dxhat * xhat[k];
    }
    const RowIn cur = in;
    float dy_cur[4];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) dy_cur[k] = dy[k], dy[k] = dy_next[k];
    load_dy(row + 2 * teams, dy_next);
    load_in(row + teams, in);

    {  // the row's two sums over the warp at once: s1's in lanes 0..15, s2's in 16..31
      const float both[2] = {s1, s2};
      const float v = warp_sums_spread(both);
      if (lane % 16 == 0) warp_sums[warp][lane / 16] = v;
    }
    __syncthreads();
    if (threadIdx.x < teams) {
      const unsigned w0 = threadIdx.x * warps_per_team;
      float m1 = warp_sums[w0][0], m2 = warp_sums[w0][1];
      for (unsigned w = 1; w < warps_per_team; ++w) m1 += warp_sums[w0 + w][0], m2 += warp_sums[w0 + w][1];
      row_means[threadIdx.x][0] = m1 / float(N);
      row_means[threadIdx.x][1] = m2 / float(N);
    }
    __syncthreads();
    if (row >= r1) continue;  // uniform over the team; the barriers above are the block's
    const float m1 = row_means[my_team][0], m2 = row_means[my_team][1];
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      const float d0 = dy_cur[k] + dg[k] * (cur.rs * (dy_cur[k] * ga[k] - m1 - xhat[k] * m2));
      acc[0][k] += dy_cur[k] * xhat[k];
      acc[1][k] += dy_cur[k];
#pragma unroll
      for (unsigned d = 0; d < unsigned(kMaxD); ++d)
        if (kExactD || d < D) acc[2 + d][k] += d0 * cur.x[d];
    }
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
  const bool exact = D == kMaxD && aligned8(X);  // the presets' D, read in pairs
  if (h0_out)
    exact ? launch_onepass<true, true>(a, tm, smem, chunks, rows, partial, stream)
          : launch_onepass<false, true>(a, tm, smem, chunks, rows, partial, stream);
  else
    exact ? launch_onepass<true, false>(a, tm, smem, chunks, rows, partial, stream)
          : launch_onepass<false, false>(a, tm, smem, chunks, rows, partial, stream);
}

}  // namespace grpo::layernorm_onepass
