// Checkpoints: the safetensors layout, a bit-exact round trip, resume's checks against the
// configuration, and writes that fail loudly without touching the old file (corrupt files:
// test_checkpoint_corrupt.cpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/io.h"
#include "engine/checkpoint/resume.h"
#include "core/errors.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/checkpoint_test_util.h"

namespace grpo::test {
namespace {

TEST(Checkpoint, SafetensorsLayoutWithPyTorchNamesAndShapes) {
  const Trained& t = trained();
  const uint64_t n = header_len(t.bytes);
  EXPECT_EQ((8 + n) % 8, 0u) << "data should start 8-byte aligned";
  const nlohmann::json h = header(t.bytes);
  const int H = t.c.hidden_size, D = t.c.obs_dim();
  const std::map<std::string, std::vector<int>> want = {
      {"fc_in.weight", {H, D}}, {"layer_norm.weight", {H}}, {"layer_norm.bias", {H}}, {"fc1.weight", {H, H}},
      {"fc1.bias", {H}},        {"fc_out.weight", {3, H}},  {"fc_out.bias", {3}}};
  size_t data = 0;
  for (const auto& [name, shape] : want)
    for (const std::string prefix : {"", "optimizer.exp_avg.", "optimizer.exp_avg_sq."}) {
      const auto& e = h.at(prefix + name);
      EXPECT_EQ(e.at("dtype"), "F32");
      EXPECT_EQ(e.at("shape").get<std::vector<int>>(), shape) << prefix + name;
      const auto off = e.at("data_offsets").get<std::vector<size_t>>();
      size_t count = 1;
      for (int d : shape) count *= size_t(d);
      EXPECT_EQ(off[1] - off[0], 4 * count);
      data += off[1] - off[0];
    }
  EXPECT_EQ(h.size(), 1 + 3 * want.size());
  EXPECT_EQ(t.bytes.size(), 8 + n + data);
  // fc_in.weight's bytes are the parameter slab's first tensor, as stored in memory.
  const auto off = h["fc_in.weight"]["data_offsets"].get<std::vector<size_t>>();
  EXPECT_EQ(0, std::memcmp(t.bytes.data() + 8 + n + off[0], t.s.slabs.data(), off[1] - off[0]));
  for (const auto& [k, v] : h["__metadata__"].items()) EXPECT_TRUE(v.is_string()) << k;
  EXPECT_EQ(h["__metadata__"]["epoch"], "3");
  EXPECT_EQ(h["__metadata__"]["adam_step"], "3");
  EXPECT_EQ(h["__metadata__"]["seed"], std::to_string(t.c.seed));
  EXPECT_EQ(h["__metadata__"]["best_score"], "0.75");
  EXPECT_EQ(nlohmann::json::parse(h["__metadata__"]["config"].get<std::string>())["hidden_size"], H);
}

TEST(Checkpoint, RoundTripIsExact) {
  const Trained& t = trained();
  const fs::path p = temp_dir() / "round.safetensors";
  save_checkpoint(p.string(), t.c, t.s, -std::numeric_limits<float>::infinity(), 7);
  const Checkpoint ck = load_checkpoint(p.string());
  EXPECT_TRUE(ck.has_optimizer);
  EXPECT_EQ(ck.best_score, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(ck.best_epoch, 7u);
  EXPECT_EQ(0, std::memcmp(&ck.state.scalars, &t.s.scalars, sizeof(TrainScalars)));
  const size_t n = ParamLayout(t.c.hidden_size, t.c.obs_dim()).total;
  for (int slab : {0, 2, 3})
    EXPECT_EQ(0, std::memcmp(ck.state.slabs.data() + slab * n, t.s.slabs.data() + slab * n, n * sizeof(float)))
        << "slab " << slab;
  for (size_t i = n; i < 2 * n; ++i) ASSERT_EQ(ck.state.slabs[i], 0.f) << "gradients are not stored";
  TrainConfig back = ck.config;
  EXPECT_EQ(back.hidden_size, t.c.hidden_size);
  EXPECT_EQ(back.game.screen_width, t.c.game.screen_width);
  EXPECT_EQ(back.game.min_interval_steps, t.c.game.min_interval_steps);
  EXPECT_EQ(back.lr, t.c.lr);
  EXPECT_EQ(back.dropout, t.c.dropout);
  EXPECT_EQ(back.seed, t.c.seed);
  EXPECT_EQ(back.algo, Algo::Reference);
  EXPECT_EQ(checkpoint_file_name(200), "ckpt-epoch-000200.safetensors");
  EXPECT_LT(checkpoint_file_name(99), checkpoint_file_name(100));
  fs::remove_all(temp_dir());
}

TEST(Checkpoint, ParametersOnlyFileLoadsForPlay) {
  const Trained& t = trained();
  nlohmann::json h = header(t.bytes);
  for (auto it = h.begin(); it != h.end();) it = it.key().rfind("optimizer.", 0) == 0 ? h.erase(it) : std::next(it);
  const fs::path p = temp_dir() / "params.safetensors";
  spit(p, with_header(t.bytes, h));
  const Checkpoint ck = load_checkpoint(p.string());
  EXPECT_FALSE(ck.has_optimizer);
  const size_t n = ParamLayout(t.c.hidden_size, t.c.obs_dim()).total;
  EXPECT_EQ(0, std::memcmp(ck.state.slabs.data(), t.s.slabs.data(), n * sizeof(float)));
  fs::remove_all(temp_dir());
}

// --precision is the run's own setting: it round-trips, a config from before it (a "tf32" flag)
// still loads, and a value it does not know is refused.
TEST(Checkpoint, PrecisionRoundTripsAndOlderTf32FlagsLoad) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    TrainConfig c = tiny_config();
    c.precision = p;
    EXPECT_EQ(config_from_json(nlohmann::json::parse(config_to_json(c).dump())).precision, p);
  }
  nlohmann::json old = config_to_json(tiny_config());
  old.erase("precision");
  for (bool tf32 : {false, true}) {
    old["tf32"] = tf32;
    EXPECT_EQ(config_from_json(old).precision, tf32 ? Precision::Tf32 : Precision::Fp32);
  }
  old.erase("tf32");
  EXPECT_THROW(config_from_json(old), UsageError);  // neither field
  nlohmann::json odd = config_to_json(tiny_config());
  odd["precision"] = "fp16";
  EXPECT_THROW(config_from_json(odd), UsageError);
  odd["precision"] = 16;
  EXPECT_THROW(config_from_json(odd), UsageError);
}

// The rollout's way is the run's own too (a resume keeps it): it round-trips, a config from before
// it holds none and loads as the steps, and one of the pair alone or of another type is refused.
TEST(Checkpoint, RolloutWayRoundTripsAndOlderConfigsRanTheSteps) {
  for (const auto& [cluster, mma] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    TrainConfig c = tiny_config();
    c.precision = Precision::Bf16;
    c.rollout_cluster = cluster, c.rollout_cluster_mma = mma;
    const TrainConfig back = config_from_json(nlohmann::json::parse(config_to_json(c).dump()));
    EXPECT_EQ(back.rollout_cluster, cluster);
    EXPECT_EQ(back.rollout_cluster_mma, mma);
  }
  TrainConfig mma = tiny_config();
  mma.precision = Precision::Bf16;
  mma.rollout_cluster_mma = true;
  nlohmann::json old = config_to_json(mma);
  old.erase("rollout_cluster");
  EXPECT_THROW(config_from_json(old), UsageError);  // one of the pair alone
  old.erase("rollout_cluster_mma");
  EXPECT_FALSE(config_from_json(old).cluster_rollout());
  nlohmann::json odd = config_to_json(mma);
  odd["rollout_cluster_mma"] = "yes";
  EXPECT_THROW(config_from_json(odd), UsageError);
}

// ---- Resume: the checkpoint's network and game win; a different one given explicitly is refused. ----
TEST(Checkpoint, GrpoSettingsRoundTripAndOlderConfigsAreReferenceRuns) {
  TrainConfig c = tiny_grpo_config();
  c.clip = 0.3f;
  c.gamma = 0.9f;
  const TrainConfig back = config_from_json(nlohmann::json::parse(config_to_json(c).dump()));
  EXPECT_EQ(back.algo, Algo::Grpo);
  EXPECT_EQ(back.ppo_epochs, c.ppo_epochs);
  EXPECT_EQ(back.minibatches, c.minibatches);
  EXPECT_EQ(back.clip, c.clip);
  EXPECT_EQ(back.kl_beta, c.kl_beta);
  EXPECT_EQ(back.gamma, c.gamma);
  EXPECT_EQ(back.lr_schedule, LrSchedule::Linear);
  // A config written before --algo existed has none of the four fields, nor --lr-schedule.
  nlohmann::json old = config_to_json(tiny_config());
  for (const char* k : {"algo", "ppo_epochs", "minibatches", "clip", "kl_beta", "lr_schedule"}) old.erase(k);
  EXPECT_EQ(config_from_json(old).algo, Algo::Reference);
  EXPECT_EQ(config_from_json(old).lr_schedule, LrSchedule::Step);
  nlohmann::json odd = config_to_json(c);
  odd["lr_schedule"] = "cosine";
  EXPECT_THROW(config_from_json(odd), UsageError);
  // Resuming refuses another algorithm or other passes, and names the flag.
  Checkpoint ck;
  ck.config = c;
  ck.state.scalars = train_scalars_start(c.lr, 0, 0, c.lr_anneal_epochs());
  TrainConfig flags = c;
  flags.algo = Algo::Reference;
  auto only = [](const char* which) { return [which](const char* f) { return std::string(f) == which; }; };
  try {
    resume_config("x", ck, flags, only("--algo"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--algo grpo, not reference"), std::string::npos) << e.what();
  }
  flags = c;
  flags.ppo_epochs = 5;
  EXPECT_THROW(resume_config("x", ck, flags, only("--ppo-epochs"), "out"), UsageError);
  EXPECT_EQ(resume_config("x", ck, TrainConfig{}, only("--patience"), "out").algo, Algo::Grpo);
  // The linear decay's horizon is the run's --total-epochs: another total or schedule is refused.
  flags = c;
  flags.total_epochs = c.total_epochs + 1;
  try {
    resume_config("x", ck, flags, only("--total-epochs"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--total-epochs must stay 1000, not 1001"), std::string::npos) << e.what();
  }
  flags = c;
  flags.lr_schedule = LrSchedule::Step;
  EXPECT_THROW(resume_config("x", ck, flags, only("--lr-schedule"), "out"), UsageError);
  EXPECT_EQ(resume_config("x", ck, c, only("--total-epochs"), "out").total_epochs, c.total_epochs);
  // Scalars whose horizon disagrees with the config are not this run's schedule.
  ck.state.scalars = train_scalars_start(c.lr);
  EXPECT_THROW(resume_config("x", ck, c, only("--patience"), "out"), UsageError);
}

TEST(Checkpoint, ResumeRefusesOtherHiddenSizeOrGameShape) {
  Checkpoint ck;
  ck.config = tiny_config();
  ck.state.scalars = train_scalars_start(ck.config.lr);
  TrainConfig flags = TrainConfig{};
  flags.hidden_size = 64;
  flags.game.screen_width = 9;
  auto only = [](const char* which) { return [which](const char* f) { return std::string(f) == which; }; };
  try {
    resume_config("x.safetensors", ck, flags, only("--hidden-size"), "out");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--hidden-size 20, not 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resume_config("x", ck, flags, only("--screen-width"), "out"), UsageError);
  // Not given: the checkpoint's values are used; the run's own settings come from the flags.
  flags.total_epochs = 77;
  const TrainConfig c = resume_config("x", ck, flags, only("--total-epochs"), "dir");
  EXPECT_EQ(c.hidden_size, 20);
  EXPECT_EQ(c.game.screen_width, 6);
  EXPECT_EQ(c.total_epochs, 77);
  EXPECT_EQ(c.out_dir, "dir");
  EXPECT_EQ(c.metrics_path, "dir/metrics.jsonl");
  // Given with the same value: fine.
  flags.hidden_size = 20;
  EXPECT_NO_THROW(resume_config("x", ck, flags, only("--hidden-size"), "dir"));
  // A bf16 run resumed without --precision stays bf16; with the flag (or --tf32) it changes.
  ck.config.precision = Precision::Bf16;
  flags.precision = Precision::Fp32;
  EXPECT_EQ(resume_config("x", ck, flags, only("--total-epochs"), "dir").precision, Precision::Bf16);
  EXPECT_EQ(resume_config("x", ck, flags, only("--precision"), "dir").precision, Precision::Fp32);
  flags.precision = Precision::Tf32;
  EXPECT_EQ(resume_config("x", ck, flags, only("--tf32"), "dir").precision, Precision::Tf32);
}

TEST(Checkpoint, TrimMetricsKeepsEpochsBeforeTheResume) {
  const fs::path p = temp_dir() / "metrics.jsonl";
  spit(p, "{\"epoch\":0}\n{\"epoch\":1}\n{\"epoch\":2}\n{\"epoch\":3,\"torn");
  trim_metrics(p.string(), 2);
  EXPECT_EQ(slurp(p), "{\"epoch\":0}\n{\"epoch\":1}\n");
  fs::remove_all(temp_dir());
}

// ---- Writes: a failure is reported and the previous file survives intact. ----
TEST(CheckpointWrite, FullDiskIsReportedAndOldFileKept) {
  const fs::path p = temp_dir() / "keep.safetensors";
  write_file_atomic(p.string(), "old contents");
  // RLIMIT_FSIZE makes write() fail with EFBIG past the limit, as a full disk fails with ENOSPC.
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  auto prev = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string err;
  try {
    write_file_atomic(p.string(), std::string(100000, 'x'));
  } catch (const std::runtime_error& e) {
    err = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  EXPECT_NE(err.find("writing " + p.string()), std::string::npos) << err;
  EXPECT_EQ(slurp(p), "old contents");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(temp_dir())) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "the temporary file was left behind";
  fs::remove_all(temp_dir());
}

TEST(CheckpointWrite, MissingDirectoryIsReported) {
  EXPECT_THROW(write_file_atomic((temp_dir() / "no" / "such" / "f").string(), "x"), std::runtime_error);
  fs::remove_all(temp_dir());
}

}  // namespace
}  // namespace grpo::test
