// Host twins of kernels/returns.cu.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/reduce.h"
#include "kernels/returns.h"

namespace grpo {

void check_advantage_count(int count, const char* who) {
  if (count < 2 || count >= (1 << 24))
    throw std::invalid_argument(std::string(who) + ": count must be in [2, 2^24) (sample std, float counts), got " +
                                std::to_string(count));
}

void check_group_shape(int T, int G, int R, const char* who) {
  const int64_t count = int64_t{T} * R;
  if (T < 1 || G < 1 || R < 1 || count < 2 || count >= (1 << 24))
    throw std::invalid_argument(std::string(who) + ": need T, G, R >= 1 and T R in [2, 2^24), got T = " +
                                std::to_string(T) + ", G = " + std::to_string(G) + ", R = " + std::to_string(R));
}

size_t normalize_advantages_scratch_floats(int count) {
  return 3 * reduce_blocks(count > 0 ? static_cast<size_t>(count) : 1);
}

void discounted_returns_host(const float* rewards, float* returns, int T, int N, float gamma) {
  if (T < 0 || N < 0)
    throw std::invalid_argument("discounted_returns_host: T and N must be >= 0, got " + std::to_string(T) + ", " +
                                std::to_string(N));
  for (int g = 0; g < N; ++g) {
    float R = 0.f;
    for (int t = T - 1; t >= 0; --t) {
      const size_t o = static_cast<size_t>(t) * N + g;
      R = discount_step(rewards[o], gamma, R);
      returns[o] = R;
    }
  }
}

void normalize_advantages_host(const float* returns, float* adv, int count, float* /*scratch*/, float* stats_out) {
  check_advantage_count(count, "normalize_advantages_host");
  double n = 0, mean = 0, m2 = 0;  // Welford in double
  for (int i = 0; i < count; ++i) {
    n += 1;
    const double d = returns[i] - mean;
    mean += d / n;
    m2 += d * (returns[i] - mean);
  }
  const float m = static_cast<float>(mean), s = static_cast<float>(std::sqrt(m2 / (n - 1)));
  stats_out[0] = m;
  stats_out[1] = s;
  for (int i = 0; i < count; ++i) adv[i] = advantage_from(returns[i], m, s);
}

void group_normalize_rewards_host(const float* rewards, float* out, int T, int G, int R, float* stats_out) {
  check_group_shape(T, G, R, "group_normalize_rewards_host");
  const size_t N = size_t(G) * R;
  for (int g = 0; g < G; ++g) {
    double n = 0, mean = 0, m2 = 0;  // Welford in double, over t then replica
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < R; ++j) {
        const double x = rewards[size_t(t) * N + size_t(g) * R + j];
        n += 1;
        const double d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
      }
    const float m = static_cast<float>(mean), s = static_cast<float>(std::sqrt(m2 / (n - 1)));
    if (stats_out) {
      stats_out[2 * g] = m;
      stats_out[2 * g + 1] = s;
    }
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < R; ++j) {
        const size_t i = size_t(t) * N + size_t(g) * R + j;
        out[i] = group_normalized(rewards[i], m, s);
      }
  }
}

}  // namespace grpo
