// The device-resident scalars of a training run (docs/design.md principle 1, docs/notes/cuda-graphs.md
// item 1). Everything that changes from epoch to epoch lives here, in device memory, and is read
// by the kernels through a pointer: a captured graph replays with fresh values every epoch.
//
// Order of the optimiser's part of one epoch (who writes what):
//   grad_norm       writes grad_norm, clip_scale; raises nonfinite if the norm is not finite
//   adamw           reads lr, adam_step, clip_scale, nonfinite; writes NO scalar (it runs on
//                   many blocks, and a single writer avoids any race): it uses t = adam_step + 1
//   advance_schedule (one thread, last kernel of the epoch): if nonfinite, skipped_updates += 1,
//                   else adam_step += 1; clears nonfinite; best_score = max(best_score, score);
//                   epoch += 1; lr = scheduled_lr(*this)
//   finish_update   (one thread; between the updates of an epoch that makes several): the first
//                   half of advance_schedule, without the epoch and lr
// So at any time between epochs adam_step counts the updates applied so far (PyTorch's
// state['step']) and lr is the learning rate of the epoch about to run.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/host_device.h"

#if defined(GRPO_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace grpo {

struct TrainScalars {
  uint32_t epoch;             // 0-based epoch about to run (or running); keys the random streams
  uint32_t adam_step;         // AdamW updates applied so far; the next update uses t = adam_step+1
  float lr0;                  // learning rate of epoch 0 (the StepLR base)
  float lr;                   // learning rate of this epoch: scheduled_lr(*this)
  float grad_norm;            // global L2 norm of the gradient slab, before clipping
  float clip_scale;           // factor AdamW applies to every gradient: min(max_norm/(norm+1e-6), 1)
  uint32_t nonfinite;         // non-zero: this epoch's gradients are not finite, AdamW is a no-op
  uint32_t skipped_updates;   // epochs whose update was skipped because of nonfinite, in total
  float loss;                 // this epoch's loss L (written by the loss kernel), a metric
  float reward;               // mean over games of r_{T-1} (a metric, written by its kernel)
  float score;                // mean over games of the final score (a metric)
  uint32_t lr_anneal_epochs;  // 0: StepLR alone; N > 0: StepLR times a linear decay to 0 at epoch N
  float best_score;           // the best score so far (kernels/best_snapshot.h); lowest float: none
  uint32_t reserved[3];       // keeps the struct 64 bytes; zero
};
static_assert(std::is_trivially_copyable<TrainScalars>::value && std::is_standard_layout<TrainScalars>::value,
              "TrainScalars is copied to and from the device as bytes");
static_assert(sizeof(TrainScalars) == 64, "one cache line; update the reserved padding");

// StepLR (docs/spec/training.md step 8): lr0 * 0.95^floor(epoch / 1000). The power is a chain of
// double multiplications, rounded to float once at the end: IEEE multiplication is exact-rounded
// on host and device alike (and a bare product cannot be contracted into an FMA), so the host and
// the kernel agree bit for bit; PyTorch's StepLR multiplies its Python (double) lr the same way.
// Cost: epoch/1000 multiplications, done by one thread once per epoch.
GRPO_HD float step_lr(float lr0, uint32_t epoch) {
  double lr = lr0;
  for (uint32_t k = epoch / 1000; k > 0; --k) lr *= 0.95;
  return static_cast<float>(lr);
}

// --lr-schedule linear (docs/spec/training.md step 8): StepLR's rate times (N - min(epoch, N)) / N
// over N = lr_anneal_epochs, the run's --total-epochs, so the last epoch runs at 1/N of it. Both
// factors are rounded once, in double then to float; a quotient is exact-rounded on host and
// device alike, so the two agree bit for bit.
GRPO_HD float linear_lr(float lr0, uint32_t epoch, uint32_t anneal_epochs) {
  const float stepped = step_lr(lr0, epoch);
  if (anneal_epochs == 0) return stepped;
  const uint32_t left = epoch < anneal_epochs ? anneal_epochs - epoch : 0;
  return static_cast<float>(double(stepped) * double(left) / double(anneal_epochs));
}

GRPO_HD float scheduled_lr(const TrainScalars& s) { return linear_lr(s.lr0, s.epoch, s.lr_anneal_epochs); }

// The scalars at the start of a run (epoch 0) or when resuming at `epoch` with `adam_step`
// updates already applied; the metric slots start at zero.
inline TrainScalars train_scalars_start(float lr0, uint32_t epoch = 0, uint32_t adam_step = 0,
                                        uint32_t lr_anneal_epochs = 0) {
  TrainScalars s{};
  s.epoch = epoch;
  s.adam_step = adam_step;
  s.lr0 = lr0;
  s.lr_anneal_epochs = lr_anneal_epochs;
  s.lr = scheduled_lr(s);
  s.clip_scale = 1.0f;
  s.best_score = std::numeric_limits<float>::lowest();
  return s;
}

// The bookkeeping after one update: counted as applied, or as skipped when its gradients were
// not finite. An epoch of --algo grpo makes --ppo-epochs updates: finish_update after each but
// the last, whose bookkeeping advance_schedule does.
GRPO_HD void finish_update_one(TrainScalars* s) {
  if (s->nonfinite != 0)
    s->skipped_updates += 1;
  else
    s->adam_step += 1;
  s->nonfinite = 0;
}

// The end-of-epoch bookkeeping described above, shared by the kernel and the host twin.
GRPO_HD void advance_schedule_one(TrainScalars* s) {
  finish_update_one(s);
  if (s->score > s->best_score) s->best_score = s->score;
  s->epoch += 1;
  s->lr = scheduled_lr(*s);
}

// Host twins of the finish_update and advance_schedule kernels.
void finish_update_host(TrainScalars* s);
void advance_schedule_host(TrainScalars* s);

#if defined(GRPO_HAVE_CUDA)
// Launch the one-thread kernels on `s` (device memory) in `stream`.
void finish_update_cuda(TrainScalars* s, cudaStream_t stream);
void advance_schedule_cuda(TrainScalars* s, cudaStream_t stream);
#endif

}  // namespace grpo
