// The best epoch's state, kept on the executor's side (issue 16 item 4): no drain, no copy to the
// host when an epoch sets a new best score. Once the rollout has scored epoch e (s->score), and
// before any update of e, the snapshot copies the state that played it when the score beats
// s->best_score:
//   best[0 .. n)    = params,  best[n .. 2n) = adam m,  best[2n .. 3n) = adam v
//   *best_scalars   = *s with best_score = s->score (epoch e, the Adam step before e's updates)
// so the snapshot is a checkpoint that replays epoch e exactly, and it equals the state a
// checkpoint taken before epoch e would hold. s->best_score itself moves later, in
// advance_schedule (one writer). slabs: params, grads, m, v, each n floats (engine/layout.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/train_scalars.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

GRPO_HD bool beats_best(float score, float best_score) { return score > best_score; }
GRPO_HD bool is_new_best(const TrainScalars& s) { return beats_best(s.score, s.best_score); }

void best_snapshot_host(const TrainScalars* s, const float* slabs, size_t n, float* best, TrainScalars* best_scalars);
#if defined(GRPO_HAVE_CUDA)
void best_snapshot_cuda(const TrainScalars* s, const float* slabs, size_t n, float* best, TrainScalars* best_scalars,
                        cudaStream_t stream);
// The epoch's score first, in the same kernel: s->score = mean_i32 of scores[0..N) (N >= 1,
// kernels/reduce.h; every block adds them in mean_i32_cuda's order, so the same bits), then the
// snapshot as above. One kernel where mean_i32_cuda and best_snapshot_cuda are three.
void score_and_best_snapshot_cuda(const int32_t* scores, int N, TrainScalars* s, const float* slabs, size_t n,
                                  float* best, TrainScalars* best_scalars, cudaStream_t stream);
#endif

}  // namespace grpo
