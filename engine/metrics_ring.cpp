#include "engine/metrics_ring.h"

namespace grpo {

void snapshot_metrics_host(const TrainScalars* s, TrainScalars* ring) { ring[s->epoch % kMetricsRing] = *s; }

}  // namespace grpo
