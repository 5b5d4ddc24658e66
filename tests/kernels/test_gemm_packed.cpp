// The packed-weight product (cpu/gemm_packed.h) against a double-precision naive
// product: row counts that leave a partial block of 8, column counts that leave a partial
// panel (under 16 and between 16 and 32 columns), the rollout's 136 x 512 x 512, with and
// without bias. Without AVX-512 (a CPU without it, or GRPO_HOST_ISA=avx2) nothing is packed and
// gemm() must leave the output alone and say so.
#include <cstring>
#include <vector>

#include "cpu/features.h"
#include "cpu/gemm_packed.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct Shape {
  int M, N, K;
};

TEST(GemmPacked, MatchesNaiveOrDeclinesWithoutAvx512) {
  uint64_t seed = 900;
  for (const Shape s : {Shape{1, 1, 1}, Shape{13, 37, 19}, Shape{9, 20, 64}, Shape{300, 70, 5}, Shape{136, 512, 512}}) {
    SCOPED_TRACE(::testing::Message() << s.M << " x " << s.N << " x " << s.K);
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed),
               b = random_floats(s.N, ++seed);
    packed::PackedB pw;
    packed::pack_transposed(W.data(), s.N, s.K, pw);
    for (const float* bias : {static_cast<const float*>(nullptr), b.data()}) {
      auto Y = poisoned(size_t(s.M) * s.N);
      const bool done = packed::gemm(X.data(), s.M, pw, bias, Y.data());
#if defined(__x86_64__)
      const bool avx512 = cpu_has_avx512();
#else
      const bool avx512 = false;
#endif
      ASSERT_EQ(done, avx512);
      ASSERT_EQ(pw.ready(), avx512);
      if (!done) {
        const auto untouched = poisoned(Y.size());
        EXPECT_EQ(std::memcmp(Y.data(), untouched.data(), Y.size() * sizeof(float)), 0);
        continue;
      }
      EXPECT_EQ(pw.source, W.data());
      std::vector<double> ref(size_t(s.M) * s.N);
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double acc = bias ? bias[n] : 0.0;
          for (int k = 0; k < s.K; ++k) acc += double(X[size_t(m) * s.K + k]) * W[size_t(n) * s.K + k];
          ref[size_t(m) * s.N + n] = acc;
        }
      EXPECT_LE(rel_l2(Y, ref), 1e-5) << (bias ? "with bias" : "without bias");
    }
  }
}

}  // namespace
}  // namespace grpo
