// matmul.h on the device (cuBLAS, or the emulator's GEMM shim) against the OpenBLAS host twins.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/matmul.h"
#include "tests/test_util.h"

namespace grpo {
namespace {

using test::DeviceBuffer;
using test::poisoned;
using test::random_floats;
using test::rel_l2;

struct Shape {
  int M, N, K;
};
// cuBLASLt's shapes: fewer than 32 outputs or inputs, or more than kFewRowsMax rows (the few-row
// kernel has its own test, test_matmul_few_rows_cuda.cpp).
const Shape kShapes[] = {{37, 23, 19}, {5, 3, 70}, {64, 128, 20}, {300, 40, 33}, {2, 1, 1}};

// v rounded to bf16, element by element (the host's rounding).
std::vector<Bf16> bf16_copy(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  to_bf16_host(v.data(), out.data(), v.size());
  return out;
}

TEST(MatmulCuda, ForwardMatchesHostWithAndWithoutBias) {
  GRPO_REQUIRE_DEVICE();
  Blas blas;
  uint64_t seed = 1000;
  for (const Shape& s : kShapes) {
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    const auto b = random_floats(s.N, ++seed);
    DeviceBuffer<float> dX(X), dW(W), db(b);
    for (bool with_bias : {false, true}) {
      std::vector<float> want(size_t(s.M) * s.N);
      linear_forward_host(X.data(), W.data(), with_bias ? b.data() : nullptr, want.data(), s.M, s.N, s.K);
      // Offset 1 makes Y misaligned: the bias add takes its scalar path even when N % 4 == 0.
      for (size_t offset : {size_t(0), size_t(1)}) {
        DeviceBuffer<float> dY(poisoned(size_t(s.M) * s.N + offset));
        linear_forward_cuda(blas, dX.get(), dW.get(), with_bias ? db.get() : nullptr, dY.get() + offset, s.M, s.N, s.K,
                            nullptr);
        const auto got = dY.download();
        EXPECT_LE(rel_l2(std::vector<float>(got.begin() + offset, got.end()), want), 1e-5)
            << s.M << "x" << s.N << "x" << s.K << " bias " << with_bias << " offset " << offset;
      }
    }
  }
}

TEST(MatmulCuda, BackwardProductsMatchHost) {
  GRPO_REQUIRE_DEVICE();
  Blas blas;
  uint64_t seed = 2000;
  for (const Shape& s : kShapes) {
    const auto dY = random_floats(size_t(s.M) * s.N, ++seed), W = random_floats(size_t(s.N) * s.K, ++seed);
    const auto X = random_floats(size_t(s.M) * s.K, ++seed), old = random_floats(size_t(s.N) * s.K, ++seed);
    DeviceBuffer<float> ddY(dY), dW(W), dX(X);

    std::vector<float> want_dx(size_t(s.M) * s.K);
    linear_backward_input_host(dY.data(), W.data(), want_dx.data(), s.M, s.N, s.K);
    DeviceBuffer<float> got_dx(poisoned(want_dx.size()));
    linear_backward_input_cuda(blas, ddY.get(), dW.get(), got_dx.get(), s.M, s.N, s.K, nullptr);
    EXPECT_LE(rel_l2(got_dx.download(), want_dx), 1e-5) << s.M << "x" << s.N << "x" << s.K;

    for (bool accumulate : {false, true}) {
      auto want = accumulate ? old : std::vector<float>(old.size());
      linear_backward_weight_host(dY.data(), X.data(), want.data(), s.M, s.N, s.K, accumulate);
      DeviceBuffer<float> got(accumulate ? old : poisoned(old.size()));
      linear_backward_weight_cuda(blas, ddY.get(), dX.get(), got.get(), s.M, s.N, s.K, accumulate, nullptr);
      EXPECT_LE(rel_l2(got.download(), want), 1e-5) << s.M << "x" << s.N << "x" << s.K << " acc " << accumulate;
    }
  }
}

// bf16 operands one element (2 bytes) off their allocation, as the engine's odd-width slices are,
// with fp32 outputs that are 4-byte aligned only: each operand's alignment is its own in the plan
// (an fp32 C promised at the bf16 operands' 2 bytes leaves cuBLASLt no algorithm at all).
TEST(MatmulCuda, Bf16OperandsOneElementOffTheirAllocation) {
  GRPO_REQUIRE_DEVICE();
  Blas blas(BlasOptions{Precision::Bf16});
  const int M = 300, N = 37, K = 21;  // over kFewRowsMax rows, so every product is cuBLASLt's
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const auto X = bf16_copy(random_floats(size_t(M) * K + 1, seed));
  const auto W = bf16_copy(random_floats(size_t(N) * K + 1, seed + 1));
  const auto dY = bf16_copy(random_floats(size_t(M) * N + 1, seed + 2));
  DeviceBuffer<Bf16> dX(X), dW(W), ddY(dY);
  const Bf16 *x = dX.get() + 1, *w = dW.get() + 1, *dy = ddY.get() + 1;

  std::vector<float> want(size_t(M) * N);
  linear_forward_bf16_host(X.data() + 1, W.data() + 1, nullptr, want.data(), M, N, K);
  DeviceBuffer<float> y(poisoned(want.size() + 1));
  linear_forward_bf16_cuda(blas, x, w, nullptr, y.get() + 1, M, N, K, nullptr);
  auto got = y.download();
  EXPECT_LE(rel_l2(std::vector<float>(got.begin() + 1, got.end()), want), 1e-5);

  std::vector<float> want_dx(size_t(M) * K);
  linear_backward_input_bf16_host(dY.data() + 1, W.data() + 1, want_dx.data(), M, N, K);
  DeviceBuffer<float> dx(poisoned(want_dx.size() + 1));
  linear_backward_input_bf16_cuda(blas, dy, w, dx.get() + 1, M, N, K, nullptr);
  got = dx.download();
  EXPECT_LE(rel_l2(std::vector<float>(got.begin() + 1, got.end()), want_dx), 1e-5);

  std::vector<float> want_dw(size_t(N) * K);
  linear_backward_weight_bf16_host(dY.data() + 1, X.data() + 1, want_dw.data(), M, N, K, false);
  DeviceBuffer<float> dw(poisoned(want_dw.size() + 1));
  linear_backward_weight_bf16_cuda(blas, dy, x, dw.get() + 1, M, N, K, false, nullptr);
  got = dw.download();
  EXPECT_LE(rel_l2(std::vector<float>(got.begin() + 1, got.end()), want_dw), 1e-5);
}

TEST(MatmulCuda, Tf32IsAnOptionWithinItsTolerance) {
  GRPO_REQUIRE_DEVICE();
  Blas blas(BlasOptions{Precision::Tf32});
  EXPECT_TRUE(blas.tf32());
  const int M = 33, N = 40, K = 57;
  const auto X = random_floats(size_t(M) * K, 5), W = random_floats(size_t(N) * K, 6);
  std::vector<float> want(size_t(M) * N);
  linear_forward_host(X.data(), W.data(), nullptr, want.data(), M, N, K);
  DeviceBuffer<float> dX(X), dW(W), dY(poisoned(want.size()));
  linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, dY.get(), M, N, K, nullptr);
  EXPECT_LE(rel_l2(dY.download(), want), 1e-3);
  EXPECT_FALSE(Blas().tf32());
}

// A forward product cuBLASLt takes (over kFewRowsMax rows), on fp32 operands and on their bf16
// copies, with the host twins' results of each.
struct ForwardCase {
  static constexpr int M = 300, N = 37, K = 150;
  std::vector<float> want, want16;
  DeviceBuffer<float> dX, dW;
  DeviceBuffer<Bf16> dX16, dW16;
  ForwardCase(const std::vector<float>& X, const std::vector<float>& W)
      : want(size_t(M) * N), want16(want.size()), dX(X), dW(W), dX16(bf16_copy(X)), dW16(bf16_copy(W)) {
    const std::vector<Bf16> X16 = bf16_copy(X), W16 = bf16_copy(W);
    linear_forward_host(X.data(), W.data(), nullptr, want.data(), M, N, K);
    linear_forward_bf16_host(X16.data(), W16.data(), nullptr, want16.data(), M, N, K);
  }
  // X W^T through `blas` into poisoned memory, on the bf16 copies where bf16.
  std::vector<float> run(Blas& blas, bool bf16) const {
    DeviceBuffer<float> dY(poisoned(want.size()));
    if (bf16)
      linear_forward_bf16_cuda(blas, dX16.get(), dW16.get(), nullptr, dY.get(), M, N, K, nullptr);
    else
      linear_forward_cuda(blas, dX.get(), dW.get(), nullptr, dY.get(), M, N, K, nullptr);
    return dY.download();
  }
};

// BlasOptions::heuristic_rank, which bench_gemm_algos_cuda surveys: every rank the heuristic
// offers (up to 8 here) computes the product within fp32's tolerance, on fp32 and on bf16
// operands, and the first rank past them throws std::out_of_range at the shape's first use. On the
// emulator, whose four algorithms sum in different orders, the ranks give different bits: the rank
// is honoured, not ignored.
TEST(MatmulCuda, EveryHeuristicRankComputesTheProduct) {
  GRPO_REQUIRE_DEVICE();
  using F = ForwardCase;
  const F f(random_floats(size_t(F::M) * F::K, 41), random_floats(size_t(F::N) * F::K, 42));
  for (bool bf16 : {false, true}) {
    std::vector<std::vector<float>> results;
    std::vector<int> ids;
    int offered = 0;
    for (int rank = 0; rank < 8; ++rank) {
      Blas blas(BlasOptions{Precision::Fp32, size_t(32) << 20, rank});
      EXPECT_THROW(blas.last_algorithm(), std::logic_error);
      std::vector<float> got;
      try {
        got = f.run(blas, bf16);
      } catch (const std::out_of_range& e) {
        EXPECT_NE(std::string(e.what()).find("returned " + std::to_string(rank) + " usable answers"), std::string::npos)
            << e.what();
        break;
      }
      ++offered;
      const Blas::AlgoConfig algo = blas.last_algorithm();
      EXPECT_GE(algo.split_k, 1) << "rank " << rank;
      ids.push_back(algo.id);
      results.push_back(got);
      EXPECT_LE(rel_l2(results.back(), bf16 ? f.want16 : f.want), 1e-5) << "rank " << rank << " bf16 " << bf16;
    }
    EXPECT_GE(offered, 1) << "bf16 " << bf16;
#if defined(GRPO_SIMT)
    EXPECT_EQ(offered, 4) << "the emulator models four algorithms";
    int distinct = 0;
    for (size_t r = 0; r < results.size(); ++r) {
      bool seen = false;
      for (size_t q = 0; q < r; ++q)
        seen = seen || std::memcmp(results[r].data(), results[q].data(), f.want.size() * sizeof(float)) == 0;
      distinct += !seen;
    }
    EXPECT_GE(distinct, 2) << "every rank ran the same algorithm; bf16 " << bf16;
    // The model's heuristic ranks its four algorithms in a rotation: four ranks, four ids.
    EXPECT_EQ(std::set<int>(ids.begin(), ids.end()).size(), 4u) << "bf16 " << bf16;
#endif
  }
  Blas far(BlasOptions{Precision::Fp32, size_t(32) << 20, 1000});  // no heuristic offers a thousand
  EXPECT_THROW(f.run(far, false), std::out_of_range);
  EXPECT_THROW(Blas(BlasOptions{Precision::Fp32, size_t(32) << 20, -1}), std::invalid_argument);
}

// BlasOptions::split_k: the answer runs with K in that many splits (last_algorithm says so) and
// still computes the product, bf16 operands too; more splits than K, or a workspace too small for
// the splits' sums, is refused at the product's first use (std::out_of_range), as a rank past the
// heuristic's answers is. On the emulator the splits sum in an order of their own: other bits.
TEST(MatmulCuda, SplitKIsTakenOrRefused) {
  GRPO_REQUIRE_DEVICE();
  using F = ForwardCase;
  const F f(random_floats(size_t(F::M) * F::K, std::random_device{}()), random_floats(size_t(F::N) * F::K, 44));
  const int K = F::K;
  const auto run = [&](int splits, size_t workspace, bool bf16, int* taken = nullptr) {
    BlasOptions o(Precision::Fp32, workspace);
    o.split_k = splits;
    Blas blas(o);
    std::vector<float> got = f.run(blas, bf16);
    if (taken) *taken = blas.last_algorithm().split_k;
    return got;
  };
  for (bool bf16 : {false, true}) {
    const std::vector<float> whole = run(0, size_t(32) << 20, bf16);
    for (int splits : {1, 2, 3, 7}) {
      SCOPED_TRACE(::testing::Message() << splits << " splits, bf16 " << bf16);
      int taken = 0;
      const std::vector<float> got = run(splits, size_t(32) << 20, bf16, &taken);
      EXPECT_EQ(taken, splits);
      EXPECT_LE(rel_l2(got, bf16 ? f.want16 : f.want), 1e-5);
#if defined(GRPO_SIMT)
      if (splits > 1) {
        EXPECT_NE(std::memcmp(got.data(), whole.data(), got.size() * sizeof(float)), 0) << "the splits' own order";
      }
#endif
    }
  }
  // What a real cuBLASLt refuses is its own: there such a product is refused or computed; the
  // emulator's model refuses both.
  for (const auto& [splits, workspace] : {std::pair<int, size_t>{K + 1, size_t(32) << 20}, {4, 0}}) {
    SCOPED_TRACE(::testing::Message() << splits << " splits of " << K << ", " << workspace << " bytes of workspace");
    try {
      EXPECT_LE(rel_l2(run(splits, workspace, false), f.want), 1e-5);
#if defined(GRPO_SIMT)
      ADD_FAILURE() << "the model refuses more splits than K, and splits without workspace";
#endif
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("splits of K"), std::string::npos) << e.what();
    }
  }
}

// BlasOptions::answers (a tuning file's, engine/cuda/gemm_tuning.h): the product it names takes its
// answer (a rank, or rank 0 with K split), the others the heuristic_rank, and time_ranks names
// each product run with a time for each answer and each split asked. On the emulator a rank's
// algorithm, and a split, sums in its own order, so there the tuned product must differ from
// rank 0's.
TEST(MatmulCuda, TunedRanksTakeTheirAnswerForTheirProductOnly) {
  GRPO_REQUIRE_DEVICE();
  const int M = 300, N = 37, K = 150;
  const auto dY = random_floats(size_t(M) * N, 51), W = random_floats(size_t(N) * K, 52);
  const auto X = random_floats(size_t(M) * K, 53);
  DeviceBuffer<float> ddY(dY), dW(W), dX(X);
  // Outputs that outlive every call: time_ranks runs the products again on their last operands.
  DeviceBuffer<float> gx(poisoned(size_t(M) * K)), gw(poisoned(size_t(N) * K));
  // dX = dY W and dW = dY^T X: cuBLASLt's products at any row count.
  const auto run = [&](Blas& blas) {
    gx.upload(poisoned(size_t(M) * K));
    gw.upload(poisoned(size_t(N) * K));
    linear_backward_input_cuda(blas, ddY.get(), dW.get(), gx.get(), M, N, K, nullptr);
    linear_backward_weight_cuda(blas, ddY.get(), dX.get(), gw.get(), M, N, K, false, nullptr);
    return std::pair{gx.download(), gw.download()};
  };
  Blas first;
  const auto [x0, w0] = run(first);
  const std::vector<Blas::RankTimes> times = first.time_ranks(2, 1, nullptr, {3, 100000});
  ASSERT_EQ(times.size(), 2u) << "two products ran";
  for (const Blas::RankTimes& t : times) {
    ASSERT_EQ(t.us.size(), 2u);
    EXPECT_TRUE(std::isfinite(t.us[0]) && t.us[0] >= 0.f) << t.us[0];
    EXPECT_EQ(t.splits, (std::vector<int>{3, 100000}));
    ASSERT_EQ(t.split_us.size(), 2u);
    EXPECT_TRUE(std::isfinite(t.split_us[0]) && t.split_us[0] >= 0.f) << t.split_us[0];
#if defined(GRPO_SIMT)
    EXPECT_TRUE(std::isnan(t.split_us[1])) << "more splits than K: not taken, no time";
#endif
  }
  EXPECT_THROW(first.time_ranks(1, 1, nullptr, {0}), std::invalid_argument);
  // The input gradient's product: column-major dX^T [K, M] = W^T dY^T, m = K, n = M.
  const auto input = std::find_if(times.begin(), times.end(), [&](const Blas::RankTimes& t) {
    return t.shape[2] == K && t.shape[3] == M && t.shape[4] == N;
  });
  ASSERT_NE(input, times.end());
  BlasOptions tuned_options;
  tuned_options.answers[input->shape] = GemmAnswer{1, 0};
  Blas tuned(tuned_options), second(BlasOptions{Precision::Fp32, size_t(32) << 20, 1});
  const auto [xt, wt] = run(tuned);
  const auto [x1, w1] = run(second);
  EXPECT_EQ(std::memcmp(xt.data(), x1.data(), xt.size() * sizeof(float)), 0) << "the tuned product is not answer 1's";
  EXPECT_EQ(std::memcmp(wt.data(), w0.data(), wt.size() * sizeof(float)), 0) << "an untuned product left answer 0";
#if defined(GRPO_SIMT)
  EXPECT_NE(std::memcmp(xt.data(), x0.data(), xt.size() * sizeof(float)), 0) << "answer 1 summed as answer 0";
#endif
  // Rank 0 with K in 3 splits: the split's own sums, the other product untouched.
  tuned_options.answers[input->shape] = GemmAnswer{0, 3};
  BlasOptions split_options;
  split_options.split_k = 3;
  Blas tuned_split(tuned_options), split(split_options);
  const auto [xs, ws] = run(tuned_split);
  EXPECT_EQ(std::memcmp(xs.data(), run(split).first.data(), xs.size() * sizeof(float)), 0) << "not the 3 splits'";
  EXPECT_EQ(std::memcmp(ws.data(), w0.data(), ws.size() * sizeof(float)), 0) << "an untuned product left answer 0";
#if defined(GRPO_SIMT)
  EXPECT_NE(std::memcmp(xs.data(), x0.data(), xs.size() * sizeof(float)), 0) << "the split summed as answer 0";
#endif
  // An answer the heuristic does not reach, or a split it does not take: the first, with a
  // warning, not an error.
  for (const GemmAnswer far : {GemmAnswer{40, 0}, GemmAnswer{0, 100000}}) {
    tuned_options.answers[input->shape] = far;
    Blas unreachable(tuned_options);
    const auto [xu, wu] = run(unreachable);
    EXPECT_EQ(std::memcmp(xu.data(), x0.data(), xu.size() * sizeof(float)), 0)
        << "not answer 0's for rank " << far.rank << ", split " << far.split;
  }
  for (const GemmAnswer bad : {GemmAnswer{-1, 0}, GemmAnswer{0, -1}}) {
    tuned_options.answers[input->shape] = bad;
    EXPECT_THROW((Blas(tuned_options)), std::invalid_argument);
  }
}

TEST(MatmulCuda, BiasGradMatchesHostAndRepeatsBitForBit) {
  GRPO_REQUIRE_DEVICE();
  uint64_t seed = 3000;
  for (auto [M, N] : {std::pair{37, 23}, {300, 3}, {9, 132}, {0, 5}}) {
    const auto dY = random_floats(size_t(M) * N, ++seed);
    std::vector<float> want(N);
    bias_grad_host(dY.data(), want.data(), M, N, nullptr);
    DeviceBuffer<float> ddY(dY), scratch(poisoned(bias_grad_scratch_floats(M, N))), db(poisoned(2 * size_t(N)));
    bias_grad_cuda(ddY.get(), db.get(), M, N, scratch.get(), nullptr);
    bias_grad_cuda(ddY.get(), db.get() + N, M, N, scratch.get(), nullptr);
    const auto got = db.download();
    EXPECT_LE(rel_l2(std::vector<float>(got.begin(), got.begin() + N), want), 1e-5) << M << "x" << N;
    EXPECT_EQ(std::memcmp(got.data(), got.data() + N, N * sizeof(float)), 0) << M << "x" << N;
  }
}

// The Blas context owns its workspace, so a GEMM can be captured into a graph; the replay
// reads whatever X holds at replay time.
TEST(MatmulCuda, ForwardCapturesIntoAGraphAndReplays) {
  GRPO_REQUIRE_DEVICE();
  const int M = 21, N = 12, K = 10;
  Blas blas;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const auto W = random_floats(size_t(N) * K, 7), b = random_floats(N, 8);
  DeviceBuffer<float> dX(random_floats(size_t(M) * K, 9)), dW(W), db(b), dY(poisoned(size_t(M) * N));
  linear_forward_cuda(blas, dX.get(), dW.get(), db.get(), dY.get(), M, N, K, stream);  // warm-up, outside capture
  CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  linear_forward_cuda(blas, dX.get(), dW.get(), db.get(), dY.get(), M, N, K, stream);
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const auto X2 = random_floats(size_t(M) * K, 10);
  dX.upload(X2);
  dY.upload(poisoned(size_t(M) * N));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> want(size_t(M) * N);
  linear_forward_host(X2.data(), W.data(), b.data(), want.data(), M, N, K);
  EXPECT_LE(rel_l2(dY.download(), want), 1e-5);
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace grpo
