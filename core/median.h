// The median of a sample, the mean of the middle two for an even count, 0 for none: the figure
// the benchmarks take of repeated timings (bench/host_ceiling.h), and the phase clocks of a
// phase's cycles over the steps (core/phase_clock.h).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace grpo {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace grpo
