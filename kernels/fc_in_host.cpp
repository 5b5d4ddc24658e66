#include <cmath>
#include <cstddef>

#include "kernels/fc_in.h"

namespace grpo {

void fc_in_forward_host(const float* X, const float* W_in, float* h0, int M, int N, int D) {
  for (size_t r = 0; r < size_t(M); ++r)
    for (size_t c = 0; c < size_t(N); ++c) h0[r * N + c] = fc_in_dot(X + r * D, W_in + c * D, D);
}

void fc_in_transpose_host(const float* W_in, float* W_inT, int N, int D) {
  const size_t pitch = fc_in_t_pitch(N);
  for (size_t d = 0; d < size_t(D); ++d)
    for (size_t c = 0; c < pitch; ++c) W_inT[d * pitch + c] = c < size_t(N) ? W_in[c * D + d] : 0.f;
}

}  // namespace grpo
