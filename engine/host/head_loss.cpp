#include "engine/host/head_loss.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/activations_colsum.h"
#include "kernels/dropout_fast_host.h"
#include "kernels/gelu.h"
#include "kernels/gelu_vec_host.h"
#include "cpu/parallel.h"
#include "kernels/policy_head.h"

namespace grpo {

namespace {

constexpr int kChunk = 256;  // columns per GELU / mask pass (a multiple of 32: whole mask blocks)

// As in gelu_host.cpp: one AVX2 and one baseline clone, no FMA in either, fixed summation order,
// so both clones give the same bits.
#if defined(__x86_64__) && defined(__linux__)
#define GRPO_HEAD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GRPO_HEAD_CLONES
#endif

// Sum of a[i] * b[i] in eight interleaved partial sums added pairwise at the end: an order that
// does not depend on the vector width the compiler picks.
inline float dot8(const float* a, const float* b, int n) {
  float acc[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  for (int k = 0; i < n; ++i, ++k) acc[k] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

// Rows [r0, r1): their partial sums go to part (g_b1 [H], g_w_out [3H], g_b_out [3]) and *loss.
// h2 and gk (= gelu'(x) * keep) are one row each of the calling thread's buffers.
GRPO_HEAD_CLONES void head_rows(const Ops::HeadLoss& h, uint32_t epoch, uint32_t row0, float inv_m, int r0, int r1,
                                float* part, double* loss, float* h2, float* gk) {
  const int H = h.H;
  float* p_b1 = part;
  float* p_w = part + H;
  float* p_bout = part + 4 * size_t(H);
  std::fill(part, part + 4 * size_t(H) + kActions, 0.f);
  double sum = 0;
  for (int r = r0; r < r1; ++r) {
    const float* a = h.a1 + size_t(r) * H;
    for (int c0 = 0; c0 < H; c0 += kChunk) {
      const int n = std::min(kChunk, H - c0);
      float x[kChunk], g[kChunk], dg[kChunk], keep[kChunk];
      for (int j = 0; j < n; ++j) x[j] = a[c0 + j] + h.b1[c0 + j];
      hostmath::gelu_and_grad_n(x, g, dg, n);
      dropout_row_scales_host(h.drop, epoch, row0 + uint32_t(r), c0, n, keep);
      for (int j = 0; j < n; ++j) {
        h2[c0 + j] = g[j] * keep[j];
        gk[c0 + j] = dg[j] * keep[j];
      }
    }
    float z[kActions], dz[kActions], entropy;
    for (int k = 0; k < kActions; ++k) z[k] = dot8(h2, h.w_out + size_t(k) * H, H) + h.b_out[k];
    sum += objective_loss_row(h.objective, z, r, h.actions[r], h.adv[r], inv_m, dz, &entropy);
    for (int k = 0; k < kActions; ++k) {
      h.logits[size_t(r) * kActions + k] = z[k];
      h.dlogits[size_t(r) * kActions + k] = dz[k];
      p_bout[k] += dz[k];
      float* pw = p_w + size_t(k) * H;
      for (int c = 0; c < H; ++c) pw[c] += dz[k] * h2[c];
    }
    const float *w0 = h.w_out, *w1 = w0 + H, *w2 = w1 + H;
    float* da = h.da1 + size_t(r) * H;
    for (int c = 0; c < H; ++c) {
      const float d = (dz[0] * w0[c] + dz[1] * w1[c] + dz[2] * w2[c]) * gk[c];
      da[c] = d;
      p_b1[c] += d;
    }
  }
  *loss = sum;
}

}  // namespace

void policy_head_loss_host(const Ops::HeadLoss& h, HeadLossScratch& s, const HeadBlock& block) {
  check_dropout(h.drop, "policy_head_loss_host");
  if (h.M < 1 || h.H < 1)
    throw std::invalid_argument("policy_head_loss_host: need M, H >= 1, got M = " + std::to_string(h.M) +
                                ", H = " + std::to_string(h.H));
  const uint32_t epoch = h.drop.p > 0.f ? *h.drop.epoch : 0u;
  const int H = h.H;
  const float inv_m = 1.f / float(block.mean_rows > 0 ? block.mean_rows : h.M);
  const unsigned rows = colsum::rows_per_chunk(size_t(h.M)), chunks = colsum::chunks(size_t(h.M));
  const size_t stride = 4 * size_t(H) + kActions;
  if (s.partial.size() < chunks * stride) s.partial.resize(chunks * stride);
  if (s.loss.size() < chunks) s.loss.resize(chunks);
  auto chunk = [&](int ch) {
    thread_local std::vector<float> row;  // h2 and gk of the row in hand; grows once per thread
    if (row.size() < 2 * size_t(H)) row.resize(2 * size_t(H));
    head_rows(h, epoch, uint32_t(block.row0), inv_m, int(ch * rows), std::min<int>(h.M, int((ch + 1) * rows)),
              s.partial.data() + ch * stride, s.loss.data() + ch, row.data(), row.data() + H);
  };
  if (double(h.M) * H >= hostmath::kParallelElements)
    hostpar::parallel_for(int(chunks), chunk);
  else
    for (unsigned ch = 0; ch < chunks; ++ch) chunk(int(ch));

  // Stage two: chunks added in order, in double.
  auto finish = [&](size_t offset, float* out, size_t n) {
    for (size_t c = 0; c < n; ++c) {
      double acc = 0;
      for (unsigned ch = 0; ch < chunks; ++ch) acc += s.partial[ch * stride + offset + c];
      out[c] = float(acc);
    }
  };
  finish(0, h.g_b1, size_t(H));
  finish(size_t(H), h.g_w_out, kActions * size_t(H));
  finish(4 * size_t(H), h.g_b_out, kActions);
  double loss = 0;
  for (unsigned ch = 0; ch < chunks; ++ch) loss += s.loss[ch];
  if (block.loss_sum)
    *block.loss_sum = loss;
  else
    *h.loss = float(loss / h.M);
}

}  // namespace grpo
