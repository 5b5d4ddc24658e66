// Fused bias + tanh-GELU + dropout, forward and backward (contracts in gelu.h).
#include <algorithm>

#include "core/grid_dependency.cuh"
#include "kernels/activations_colsum.cuh"
#include "kernels/activations_vec.cuh"
#include "kernels/gelu.h"
#include "core/launch.h"

namespace grpo {

// One thread per group of 4 columns of a row: one Philox call serves the whole float4.
__global__ void bias_gelu_dropout_forward_kernel(const float* __restrict__ a, const float* __restrict__ bias,
                                                 float* __restrict__ out, int M, int N, DropoutSpec spec, bool vec) {
  follow_previous_kernel();
  ColumnGroup c;
  if (!column_group(M, N, c)) return;
  const uint32_t epoch = spec.p > 0.f ? *spec.epoch : 0u;
  const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, c.row, c.g);
  const float scale = dropout_scale(spec.p);
  float v[4], b[4];
  load4(a + c.off, c.n, vec, v);
  load4(bias + 4 * c.g, c.n, vec, b);
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) v[k] = (keep >> k & 1u) ? gelu(v[k] + b[k]) * scale : 0.f;
  store4(out + c.off, c.n, vec, v);
}

// Reads dout, a, bias for 4 columns of one row, writes da and adds it to the column sums.
struct BiasGeluDropoutGrad {
  const float* dout;
  const float* a;
  const float* bias;
  float* da;
  int N;
  DropoutSpec spec;
  uint32_t epoch;
  float scale;
  bool vec;
  __device__ __forceinline__ void operator()(size_t row, unsigned col0, unsigned n, float (&acc)[1][4]) const {
    const size_t off = row * N + col0;
    float d[4], x[4], b[4];
    load4(dout + off, n, vec, d);
    load4(a + off, n, vec, x);
    load4(bias + col0, n, vec, b);
    const unsigned keep = dropout_keep4(spec.p, spec.seed, spec.purpose, epoch, spec.step, uint32_t(row), col0 / 4);
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
      d[k] = (keep >> k & 1u) && k < n ? d[k] * scale * gelu_grad(x[k] + b[k]) : 0.f;
      acc[0][k] += d[k];
    }
    store4(da + off, n, vec, d);
  }
};

__global__ void bias_gelu_dropout_backward_kernel(BiasGeluDropoutGrad f, int M, unsigned rows_per_chunk,
                                                  float* partial) {
  follow_previous_kernel();
  f.epoch = f.spec.p > 0.f ? *f.spec.epoch : 0u;
  colsum::stage1<1>(f, M, f.N, rows_per_chunk, partial);
}

// Moves 8*M*N bytes (a in, out out) plus 4*N for the bias and 4 for the epoch.
void bias_gelu_dropout_forward_cuda(const float* a, const float* bias, float* out, int M, int N,
                                    const DropoutSpec& spec, cudaStream_t stream) {
  check_dropout(spec, "bias_gelu_dropout_forward_cuda");
  if (M < 0 || N < 0) throw std::invalid_argument("bias_gelu_dropout_forward_cuda: negative shape");
  if (M == 0 || N == 0) return;
  const bool vec = N % 4 == 0 && aligned16(a) && aligned16(bias) && aligned16(out);
  const size_t threads = size_t(M) * ((N + 3) / 4);
  launch_overlapped(bias_gelu_dropout_forward_kernel, dim3(ceil_div(threads, 256)), dim3(256), 0, stream, a, bias, out,
                    M, N, spec, vec);
}

// Moves 12*M*N bytes (dout and a in, da out) plus the partial sums: 8 * chunks * N (written,
// then read by stage 2), chunks <= 256.
void bias_gelu_dropout_backward_cuda(const float* dout, const float* a, const float* bias, float* da, float* dbias,
                                     int M, int N, const DropoutSpec& spec, float* scratch, cudaStream_t stream) {
  check_dropout(spec, "bias_gelu_dropout_backward_cuda");
  if (M < 0 || N < 0) throw std::invalid_argument("bias_gelu_dropout_backward_cuda: negative shape");
  if (N == 0) return;
  const bool vec = N % 4 == 0 && aligned16(dout) && aligned16(a) && aligned16(bias) && aligned16(da);
  BiasGeluDropoutGrad f{dout, a, bias, da, N, spec, 0u, dropout_scale(spec.p), vec};
  const unsigned chunks = colsum::chunks(size_t(M));
  launch_overlapped(bias_gelu_dropout_backward_kernel, colsum::stage1_grid(M, N), colsum::stage1_block(),
                    colsum::smem_bytes(1), stream, f, M, colsum::rows_per_chunk(size_t(M)), scratch);
  colsum::finish_cuda(scratch, chunks, N, dbias, nullptr, stream);
}

}  // namespace grpo
