// Host twin of the best-state snapshot (kernels/best_snapshot.h).
#include <cstring>

#include "kernels/best_snapshot.h"

namespace grpo {

void best_snapshot_host(const TrainScalars* s, const float* slabs, size_t n, float* best, TrainScalars* best_scalars) {
  if (!is_new_best(*s)) return;
  std::memcpy(best, slabs, n * sizeof(float));
  std::memcpy(best + n, slabs + 2 * n, 2 * n * sizeof(float));  // m and v follow each other
  *best_scalars = *s;
  best_scalars->best_score = s->score;
}

}  // namespace grpo
