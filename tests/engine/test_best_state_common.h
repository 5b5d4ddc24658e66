// The executor's best-state snapshot (kernels/best_snapshot.h), for any executor: running epoch
// by epoch and copying the state out before each one, best_state() after the run must be, bit
// for bit, the state before the best-scoring epoch (params, moments, every scalar but the score
// fields), with that epoch's score as its best score.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "tests/engine/engine_test_util.h"

namespace grpo::test {

inline void expect_best_state_is_the_best_epochs(
    const std::function<std::unique_ptr<Executor>(const TrainConfig&)>& make, TrainConfig c, int epochs) {
  auto ex = make(c);
  ex->set_state(initial_state(c));
  std::vector<RunState> before;
  float best = -std::numeric_limits<float>::infinity();
  uint32_t best_epoch = 0;
  int new_bests = 0;
  for (int e = 0; e < epochs; ++e) {
    before.push_back(ex->get_state());
    ex->launch_epoch();
    const TrainScalars m = ex->wait_metrics(uint32_t(e));
    if (m.score > best) best = m.score, best_epoch = uint32_t(e), ++new_bests;
  }
  SCOPED_TRACE(::testing::Message() << epochs << " epochs, best " << best << " at epoch " << best_epoch << " ("
                                    << new_bests << " new bests)");
  ASSERT_GE(new_bests, 1);
  const RunState got = ex->best_state();
  const RunState& want = before[best_epoch];
  ASSERT_EQ(got.slabs.size(), want.slabs.size());
  const size_t n = want.slabs.size() / 4;
  EXPECT_EQ(std::memcmp(got.slabs.data(), want.slabs.data(), n * sizeof(float)), 0) << "parameters";
  for (size_t i = n; i < 2 * n; ++i) ASSERT_EQ(got.slabs[i], 0.f) << "gradients are not part of it";
  EXPECT_EQ(std::memcmp(got.slabs.data() + 2 * n, want.slabs.data() + 2 * n, 2 * n * sizeof(float)), 0) << "moments";
  EXPECT_EQ(got.scalars.score, best);
  EXPECT_EQ(got.scalars.best_score, best);
  TrainScalars a = got.scalars, b = want.scalars;
  a.score = b.score = 0.f;
  a.best_score = b.best_score = 0.f;
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0)
      << "scalars: epoch " << a.epoch << " vs " << b.epoch << ", adam step " << a.adam_step << " vs " << b.adam_step;
  // The run's own best score moved with it.
  EXPECT_EQ(ex->get_state().scalars.best_score, best);
}

}  // namespace grpo::test
