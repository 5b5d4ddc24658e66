// The fused rollout step (engine/cuda/rollout_step.cu) against its host twin, Ops::rollout_step's
// default on HostOps (the ops in turn): from the same arena (random parameters, games played a
// few random steps, a random a1 for step t, every output poisoned), the same actions, rewards,
// observations and game state bit for bit, and the same logits and next-step trunk (h0, h1,
// LayerNorm statistics) within the fp32 tolerances. At the last step nothing of a next step is
// written. Fresh inputs each run; the seed is printed on failure.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/ops.h"
#include "engine/cuda/rollout_step.h"
#include "engine/host/ops.h"
#include "engine/step.h"
#include "kernels/fc_in.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/game_bytes_util.h"
#include "tests/test_util.h"

namespace grpo::test {
namespace {

// An arena on the host (64-byte aligned, poisoned) and its copy on the device, same offsets.
struct Arenas {
  std::vector<float> host_slabs, host_words;
  void* host = nullptr;
  DeviceBuffer<float> dev_slabs;
  DeviceBuffer<char> dev;
  size_t bytes;
  Arenas(size_t slab_floats, size_t arena_bytes)
      : host_slabs(slab_floats),
        host_words(arena_bytes / 4 + 32, poison_value()),
        dev_slabs(slab_floats),
        dev(arena_bytes),
        bytes(arena_bytes) {
    host = host_words.data() + (16 - reinterpret_cast<uintptr_t>(host_words.data()) % 64 / 4) % 16;
  }
  void upload() {
    dev_slabs.upload(host_slabs);
    CUDA_CHECK(cudaMemcpy(dev.get(), host, bytes, cudaMemcpyHostToDevice));
  }
  std::vector<char> download() const {
    std::vector<char> v(bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(v.data(), dev.get(), bytes, cudaMemcpyDeviceToHost));
    return v;
  }
};

template <class T>
std::vector<T> view(const void* base, const void* p, const void* host_base, size_t n) {
  // p points into the host arena; the same offset into `base` (a downloaded copy).
  const size_t off = static_cast<const char*>(p) - static_cast<const char*>(host_base);
  std::vector<T> v(n);
  if (n > 0) std::memcpy(v.data(), static_cast<const char*>(base) + off, n * sizeof(T));  // v.data() may be null
  return v;
}

template <class T>
std::vector<T> host_view(const T* p, size_t n) {
  return std::vector<T>(p, p + n);
}

// Step t of the epoch's rollout over b, as the training step hands it out (engine/ops.cpp).
Ops::RolloutStep step_of(const StepBuffers& b, const TrainConfig& c, int t) {
  const Ops::Rollout r{b.p,       b.acts,      b.obs,     b.actions,   b.rewards,    b.games, c.seed, &b.scalars->epoch,
                       c.dropout, c.max_steps, c.games(), c.obs_dim(), c.hidden_size};
  return rollout_step_at(r, t);
}

void expect_fused_step_matches_host_twin(TrainConfig c, int t) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", hidden " << c.hidden_size << ", " << c.games()
                                    << " games, dropout " << c.dropout << ", step " << t << " of " << c.max_steps);
  c.seed = seed;
  const int N = c.games(), D = c.obs_dim(), H = c.hidden_size;
  const ParamLayout pl(c.hidden_size, D);
  const ArenaLayout al(c);
  Arenas a(4 * pl.total, al.total);
  const auto w = random_floats(pl.total, seed, -0.3f, 0.3f);
  std::copy(w.begin(), w.end(), a.host_slabs.begin());
  const StepBuffers hb = StepBuffers::over(a.host_slabs.data(), a.host, c);
  hb.scalars->epoch = uint32_t(seed % 1000);
  HostOps host(c.game, c.batch_size);
  // Games a few random moves in (fruits falling, scores moving), observations in step t's rows.
  host.games_reset(hb.games, c.seed, &hb.scalars->epoch, hb.obs);
  std::mt19937 rng{uint32_t(seed)};
  std::vector<int32_t> moves(N);
  std::vector<float> rewards(N), obs(size_t(N) * D);
  for (int k = 0; k < 6; ++k) {
    for (auto& m : moves) m = int32_t(rng() % 3);
    host.games_step(hb.games, moves.data(), c.seed, &hb.scalars->epoch, uint32_t(k), rewards.data(), obs.data());
  }
  const auto a1 = random_floats(size_t(N) * H, seed + 1, -2.f, 2.f);
  std::copy(a1.begin(), a1.end(), hb.acts.rows_from(size_t(t) * N, H).a1);
  host.fc_in_transpose(hb.p.fc_in_w, hb.p.fc_in_w_t, H, D);  // what refresh_weight_copies leaves
  a.upload();

  Blas blas;
  CudaOps dev(c.game, c.batch_size, blas, nullptr);
  const StepBuffers db = StepBuffers::over(a.dev_slabs.get(), a.dev.get(), c);
  const Ops::RolloutStep hs = step_of(hb, c, t), ds = step_of(db, c, t);
  // First without h0 (Rollout::keep_h0 false, as CudaOps trains at the presets' shapes), then as
  // the host twin runs it, from the same upload: the same bytes everywhere but h0's rows, which
  // keep their poison without it.
  Ops::RolloutStep ds_no_h0 = ds;
  ds_no_h0.next.h0 = nullptr;
  dev.rollout_step(ds_no_h0);
  const std::vector<char> got_no_h0 = a.download();
  a.upload();
  host.rollout_step(hs);  // HostOps keeps the default: the host twin
  dev.rollout_step(ds);
  const std::vector<char> got = a.download();
  const void* base = got.data();
  const size_t h0_off =
      static_cast<const char*>(static_cast<const void*>(hs.next.h0)) - static_cast<const char*>(a.host);
  const size_t h0_bytes = hs.obs_next ? size_t(N) * H * sizeof(float) : 0;
  EXPECT_EQ(std::memcmp(got.data(), got_no_h0.data(), h0_off), 0) << "bytes before h0 differ without h0";
  EXPECT_EQ(
      std::memcmp(got.data() + h0_off + h0_bytes, got_no_h0.data() + h0_off + h0_bytes, got.size() - h0_off - h0_bytes),
      0)
      << "bytes after h0 differ without h0";
  for (float x : view<float>(got_no_h0.data(), hs.next.h0, a.host, h0_bytes / sizeof(float)))
    ASSERT_TRUE(std::isnan(x)) << "h0 written without next.h0";

  EXPECT_EQ(view<int32_t>(base, hs.actions, a.host, N), host_view(hs.actions, N)) << "actions";
  const auto same_bytes = [&](const void* p, size_t n, const char* what) {
    const size_t off = static_cast<const char*>(p) - static_cast<const char*>(a.host);
    EXPECT_EQ(std::memcmp(got.data() + off, p, n), 0) << what;
  };
  same_bytes(hs.rewards, size_t(N) * 4, "rewards");
  expect_same_game_bytes(got, a.host, hb.games);
  const auto logits = view<float>(base, hs.now.logits, a.host, size_t(N) * kActions);
  EXPECT_TRUE(all_close(logits, host_view(hs.now.logits, size_t(N) * kActions))) << "logits";
  EXPECT_LE(rel_l2(logits, host_view(hs.now.logits, size_t(N) * kActions)), 1e-5);
  if (hs.obs_next) {
    same_bytes(hs.obs_next, size_t(N) * D * 4, "next observations");
    // h0 in kernels/fc_in.h's order, to the bit: what the LayerNorm input backward recomputes.
    std::vector<float> want_h0(size_t(N) * H);
    fc_in_forward_host(hs.obs_next, hb.p.fc_in_w, want_h0.data(), N, H, D);
    EXPECT_EQ(view<float>(base, hs.next.h0, a.host, size_t(N) * H), want_h0) << "h0 not in fc_in's order";
    const bool bf16 = hs.next.h1_bf16 != nullptr;
    for (auto [p, n, what] :
         {std::tuple{hs.next.h0, size_t(N) * H, "h0"}, std::tuple{hs.next.h1, size_t(N) * H, "h1"},
          std::tuple{hs.next.ln_mean, size_t(N), "mean"}, std::tuple{hs.next.ln_rstd, size_t(N), "rstd"}}) {
      if (bf16 && p == hs.next.h1) continue;  // below
      const auto g = view<float>(base, p, a.host, n), want = host_view(p, n);
      EXPECT_TRUE(all_close(g, want)) << what;
      EXPECT_LE(rel_l2(g, want), 1e-5) << what;
    }
    if (bf16) {
      // --precision bf16: h1 goes out as bf16 instead of fp32. The host twin's copy is its h1
      // rounded; the kernel's is within one bf16 step of the host's h1 (its own fp32 h1 may sit
      // on the other side of a rounding midpoint), and its fp32 h1 stays unwritten.
      const size_t n = size_t(N) * H;
      const auto copy = view<Bf16>(base, hs.next.h1_bf16, a.host, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(hs.next.h1_bf16[i].bits, to_bf16(hs.next.h1[i]).bits) << "host @" << i;
        const float want = hs.next.h1[i];
        ASSERT_LE(std::fabs(to_float(copy[i]) - want), std::ldexp(std::fabs(want), -7) + 1e-6f) << "h1_bf16 @" << i;
      }
      for (float x : view<float>(base, hs.next.h1, a.host, n))
        ASSERT_TRUE(std::isnan(x)) << "h1 written beside its copy";
    }
  } else {
    if (hs.now.h1_bf16) same_bytes(hs.now.h1_bf16, size_t(N) * H * sizeof(Bf16), "h1_bf16 (the poison)");
    // The last step has no next one: its `next` views alias step t's own rows (step_of), whose
    // trunk nobody computed here, so the poison there must survive.
    for (auto [p, n, what] :
         {std::tuple{hs.now.h0, size_t(N) * H, "h0"}, std::tuple{hs.now.h1, size_t(N) * H, "h1"},
          std::tuple{hs.now.ln_mean, size_t(N), "mean"}, std::tuple{hs.now.ln_rstd, size_t(N), "rstd"}})
      for (float x : view<float>(base, p, a.host, n)) ASSERT_TRUE(std::isnan(x)) << "the last step wrote " << what;
  }
}

TEST(RolloutStepCuda, MatchesHostTwinMidRollout) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.max_steps = 4;
  expect_fused_step_matches_host_twin(c, 1);
}

TEST(RolloutStepCuda, MatchesHostTwinAtARaggedHiddenSize) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 37;  // not a multiple of 4: the scalar path of every load, a partial last group
  c.batch_size = 5;
  c.max_steps = 3;
  expect_fused_step_matches_host_twin(c, 0);
}

TEST(RolloutStepCuda, MatchesHostTwinWideRaggedAndWithoutDropout) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 1002;  // 251 column groups: threads loop over two, the last one partial
  c.dropout = 0.f;
  c.max_steps = 2;
  expect_fused_step_matches_host_twin(c, 0);
}

TEST(RolloutStepCuda, MatchesHostTwinAtTheSmallPresetsWidth) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.hidden_size = 512;  // 128 column groups: one per thread
  c.game = GameConfig{};
  c.batch_size = 2;
  c.max_steps = 3;
  expect_fused_step_matches_host_twin(c, 1);
}

// A thread keeps as many column groups in registers as the block's widest thread has, up to
// four: the reference's width (2048) four on every thread, the float4 paths, h0 computed twice;
// 1536 and 1000 three and two (1000: 250 groups, so the second only on some threads); 1030 and
// 2046 a ragged third or fourth group, the scalar paths. Past four groups (2064: a fifth whole
// group for 4 threads; 2102: a fifth, partial one) the per-group path computes h0 and the GELU
// again.
TEST(RolloutStepCuda, MatchesHostTwinAtTheReferenceWidthAndPast) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.game = GameConfig{};
  c.batch_size = 1;
  c.max_steps = 2;
  for (const int H : {2048, 1536, 1000, 1030, 2046, 2064, 2102}) {
    SCOPED_TRACE("hidden " + std::to_string(H));
    c.hidden_size = H;
    expect_fused_step_matches_host_twin(c, 0);
  }
}

TEST(RolloutStepCuda, LastStepWritesNoNextStep) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.max_steps = 3;
  expect_fused_step_matches_host_twin(c, 2);
}

// --precision bf16: the next step's h1 also as bf16 (vector stores, the ragged scalar path, and
// none at the last step).
TEST(RolloutStepCuda, WritesTheBf16CopyOfH1) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  c.precision = Precision::Bf16;
  c.max_steps = 3;
  expect_fused_step_matches_host_twin(c, 1);
  expect_fused_step_matches_host_twin(c, 2);
  c.hidden_size = 37;
  expect_fused_step_matches_host_twin(c, 0);
}

TEST(RolloutStepCuda, RefusesShapesItDoesNotTake) {
  GRPO_REQUIRE_DEVICE();
  TrainConfig c = tiny_config();
  Ops::RolloutStep s{};
  s.H = 4;
  s.D = c.obs_dim();
  EXPECT_THROW(rollout_step_cuda(c.game, s, nullptr), std::invalid_argument);
  s.H = 16;
  s.D = c.obs_dim() + 1;
  EXPECT_THROW(rollout_step_cuda(c.game, s, nullptr), std::invalid_argument);
  // No game to play, so nothing is read: only the transposed fc_in.weight is missing, then
  // misaligned, then there.
  s.D = c.obs_dim();
  const uint32_t epoch = 0;
  s.epoch = &epoch;
  alignas(16) float w_t[8] = {};
  s.games = make_games_view(c.game, 0, w_t);
  for (float* p : {static_cast<float*>(nullptr), w_t + 1}) {
    s.p.fc_in_w_t = p;
    try {
      rollout_step_cuda(c.game, s, nullptr);
      ADD_FAILURE() << "a step without an aligned transposed fc_in.weight ran";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("fc_in.weight transposed"), std::string::npos) << e.what();
    }
  }
  s.p.fc_in_w_t = w_t;
  EXPECT_NO_THROW(rollout_step_cuda(c.game, s, nullptr));
  // A range of games must lie inside the step's N (here 0): the empty range at 0 runs nothing.
  EXPECT_NO_THROW(rollout_step_cuda(c.game, s, nullptr, GameRange{0, 0}));
  for (const GameRange bad : {GameRange{0, 1}, GameRange{1, -1}, GameRange{-1, 1}})
    EXPECT_THROW(rollout_step_cuda(c.game, s, nullptr, bad), std::invalid_argument) << bad.first << " " << bad.count;
}

}  // namespace
}  // namespace grpo::test
