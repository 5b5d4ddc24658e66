// Where everything lives. Parameters, gradients and the two AdamW moments are four slabs with
// one layout (tiny-cuda-nn style), so the optimiser and the gradient norm see one flat array;
// every activation and rollout buffer is a view into one arena sized from the config before any
// work. Offsets are in elements and rounded up to 4 so every view is 16-byte aligned (float4).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/train_config.h"
#include "kernels/bf16.h"
#include "kernels/policy_head.h"

namespace grpo {

inline size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }

struct ParamTensor {
  const char* name;  // PyTorch module name (docs/spec/training.md), used in checkpoints
  int rows, cols;    // [out, in] for weights, [n, 1] for vectors
  size_t offset;     // in floats, into the slab
  size_t size() const { return size_t(rows) * cols; }
};

// fc_in.weight, layer_norm.weight, layer_norm.bias, fc1.weight, fc1.bias, fc_out.weight, fc_out.bias
struct ParamLayout {
  enum Index { FcInW, LnGamma, LnBeta, Fc1W, Fc1B, FcOutW, FcOutB, kCount };
  std::array<ParamTensor, kCount> tensors{};
  size_t total = 0;  // floats in one slab, padding included
  size_t count = 0;  // real parameters, padding excluded

  ParamLayout(int hidden, int obs_dim);
  const ParamTensor& operator[](int i) const { return tensors[i]; }
};

// Typed pointers into one slab (parameters, gradients or a moment) following a ParamLayout.
struct ParamViews {
  float* fc_in_w;
  float* ln_gamma;
  float* ln_beta;
  float* fc1_w;
  float* fc1_b;
  float* fc_out_w;
  float* fc_out_b;
  // --precision bf16, parameters only: fc1.weight's bf16 working copy, made from fc1_w when the
  // state is set and written by every update (engine/step.h, refresh_weight_copies); nullptr
  // otherwise (fp32 products).
  Bf16* fc1_w_bf16 = nullptr;
  // Parameters only: fc_in.weight transposed (kernels/fc_in.h), kept as fc1_w_bf16 is, which the
  // CUDA fused step reads; nullptr in a view that no rollout reads.
  float* fc_in_w_t = nullptr;
  static ParamViews over(float* slab, const ParamLayout& l);
};

// Activations of `rows` rows, each [rows, hidden] except logits [rows, 3] and mean/rstd [rows].
// Under --precision bf16 also h1 (fc1's input) and da1 (the gradient at fc1's output) in bf16,
// the operands of fc1's products; their producers may then skip the fp32 h1 and da1 (the CUDA
// kernels do). nullptr otherwise.
struct PolicyActs {
  float *h0, *h1, *a1, *h2, *logits, *ln_mean, *ln_rstd;
  Bf16 *h1_bf16 = nullptr, *da1_bf16 = nullptr;
  // The same views moved down `first` rows (hidden floats per row, kActions per logits row).
  PolicyActs rows_from(size_t first, int hidden) const {
    const size_t r = first * size_t(hidden);
    return {h0 + r,
            h1 + r,
            a1 + r,
            h2 + r,
            logits + first * kActions,
            ln_mean + first,
            ln_rstd + first,
            shift(h1_bf16, r),
            shift(da1_bf16, r)};
  }

 private:
  static Bf16* shift(Bf16* p, size_t r) { return p ? p + r : nullptr; }
};

// Every buffer one epoch needs, as offsets (bytes) into one arena. M = T * N samples, N games.
struct ArenaLayout {
  // Rollout record, one row per (t, game), t-major: row = t * N + game.
  size_t obs, actions, rewards, returns, advantages;
  // --algo grpo: the rollout policy's log pi_old(a_t) per sample (no space for the reference).
  size_t old_logp;
  // Network activations for M rows: rollout step t fills rows t*N.. (h0, h1, a1, LN statistics),
  // the loss pass reuses them and overwrites h2 and the logits with its fresh dropout mask.
  size_t h0, h1, a1, h2, logits, ln_mean, ln_rstd;
  // --precision bf16: h1 and da1 [M, H] in bf16 and fc1.weight's bf16 copy [H, H] (else empty).
  size_t h1_bf16, da1_bf16, fc1_w_bf16;
  // fc_in.weight transposed for the rollout's fused step (kernels/fc_in.h: [D, H rounded up to 4]).
  size_t fc_in_w_t;
  // Backward: trunk_work holds dh2, then dh0; da1 reuses h2 and dh1 reuses a1 (engine/policy.cpp).
  size_t trunk_work, dlogits;
  size_t games;               // the vectorised game state
  size_t adv_stats;           // mean and std of the returns (2 floats)
  size_t scalars;             // TrainScalars
  size_t best, best_scalars;  // the best epoch's params, m and v (3 slabs), and its TrainScalars
  size_t metrics;             // the device-side metrics ring (kMetricsRing TrainScalars)
  size_t scratch;             // reductions' partial results
  size_t scratch_floats;
  size_t total;  // bytes

  explicit ArenaLayout(const TrainConfig& c);
};

}  // namespace grpo
