// Parameter initialisation (docs/spec/training.md): W_in ~ N(0, 0.02^2), W1 ~ N(0, 2/Hd), W_out ~
// N(0, 0.01^2), biases 0, gamma 1, beta 0. Drawn on the host from the run's seed with the same
// counter-based Philox streams as everything else, so a seed names one initial network on every
// executor; the executor uploads the slab once.
#pragma once
#include <cstdint>

#include "engine/layout.h"

namespace grpo {

// Fills every parameter of `params` (a host slab laid out by `l`); padding is zeroed.
void init_params(float* params, const ParamLayout& l, uint64_t seed);

}  // namespace grpo
