// Dropout masks for the host twins' row loops (gelu_host.cpp, dropout_host.cpp), drawn eight
// Philox groups at a time: the small preset draws ~10M groups per epoch, and the AVX2 path (picked
// at run time) computes eight groups per call, several times faster per group than scalar
// Philox4x32-10.
// Bits are those of dropout_keep4 exactly: same counters, and u >= p is tested as the exact
// integer comparison (bits >> 8) >= ceil(p * 2^24).
#pragma once
#include <cstdint>

#include "kernels/dropout.h"

namespace grpo {

// keep[j] = dropout_scale(p) if column c0 + j of `row` is kept, else 0, for j < n. c0 % 4 == 0.
// `epoch` is the value already read through spec.epoch (ignored when p == 0).
void dropout_row_scales_host(const DropoutSpec& spec, uint32_t epoch, uint32_t row, int c0, int n, float* keep);

}  // namespace grpo
