// Host twins of kernels/reduce.cu: the same contract, summed in double (a sequential loop is
// already deterministic, so the twin can afford to be the more accurate reference).
#include "kernels/reduce.h"

#include <stdexcept>
#include <string>

namespace grpo {

size_t mean_scratch_floats(int n) { return reduce_blocks(n > 0 ? static_cast<size_t>(n) : 1); }

static void check_count(int n, const char* who) {
  if (n < 1) throw std::invalid_argument(std::string(who) + ": n must be >= 1, got " + std::to_string(n));
}

void mean_f32_host(const float* x, int n, float* out, float* /*scratch*/) {
  check_count(n, "mean_f32_host");
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  *out = static_cast<float>(s / n);
}

void mean_i32_host(const int32_t* x, int n, float* out, float* /*scratch*/) {
  check_count(n, "mean_i32_host");
  int64_t s = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  *out = static_cast<float>(static_cast<double>(s) / n);
}

}  // namespace grpo
