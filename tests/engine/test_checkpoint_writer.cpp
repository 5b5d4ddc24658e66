// The checkpoint writer's thread (engine/checkpoint/writer.h): every submitted state reaches its
// file whole and in order (the newest state of a path wins), a failed write is reported by the
// next submit and by drain while last_good keeps naming the newest whole file, and destroying
// the writer finishes what was queued.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/writer.h"
#include "tests/engine/engine_test_util.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

fs::path writer_dir() {
  const fs::path d = fs::temp_directory_path() / ("grpo_writer_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// A state whose parameters say which one it is: the first parameter holds `tag`.
RunState tagged(const RunState& base, float tag) {
  RunState s = base;
  s.slabs[0] = tag;
  return s;
}

const RunState& base_state() {
  static const RunState s = [] {
    const TrainConfig c = tiny_config();
    auto ex = make_host_executor(c);
    return run_epochs(c, *ex, 2);
  }();
  return s;
}

TEST(CheckpointWriter, WritesEveryFileWholeAndTheNewestStateOfAPathWins) {
  const fs::path d = writer_dir();
  const TrainConfig c = tiny_config();
  {
    CheckpointWriter w;
    for (int i = 0; i < 6; ++i) {
      w.submit((d / ("ckpt-" + std::to_string(i) + ".safetensors")).string(), c, tagged(base_state(), float(i)), 0.5f,
               uint32_t(i));
      w.submit((d / "best.safetensors").string(), c, tagged(base_state(), 100.f + float(i)), float(i), uint32_t(i));
    }
    w.drain();
    // A replaced job keeps its place in the queue, so either of the last two may be written last.
    EXPECT_TRUE(w.last_good() == (d / "ckpt-5.safetensors").string() ||
                w.last_good() == (d / "best.safetensors").string())
        << w.last_good();
  }
  for (int i = 0; i < 6; ++i) {
    const Checkpoint ck = load_checkpoint((d / ("ckpt-" + std::to_string(i) + ".safetensors")).string());
    EXPECT_EQ(ck.state.slabs[0], float(i));
    EXPECT_EQ(ck.best_epoch, uint32_t(i));
    EXPECT_EQ(
        std::memcmp(ck.state.slabs.data() + 1, base_state().slabs.data() + 1, 4 * (ck.state.slabs.size() / 4 - 1)), 0);
  }
  const Checkpoint best = load_checkpoint((d / "best.safetensors").string());
  EXPECT_EQ(best.state.slabs[0], 105.f) << "an older best.safetensors overwrote the newest";
  EXPECT_EQ(best.best_score, 5.f);
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  fs::remove_all(d);
}

TEST(CheckpointWriter, AFailedWriteIsReportedAndTheLastGoodFileKept) {
  const fs::path d = writer_dir();
  const TrainConfig c = tiny_config();
  CheckpointWriter w("resumed-from.safetensors");
  EXPECT_EQ(w.last_good(), "resumed-from.safetensors");
  const std::string good = (d / "good.safetensors").string();
  w.submit(good, c, base_state(), 0.f, 0);
  w.drain();
  EXPECT_EQ(w.last_good(), good);
  w.submit((d / "missing-folder" / "x.safetensors").string(), c, base_state(), 0.f, 0);
  EXPECT_THROW(w.drain(), std::runtime_error);
  EXPECT_THROW(w.drain(), std::runtime_error) << "the error stays until the run ends";
  EXPECT_THROW(w.submit((d / "later.safetensors").string(), c, base_state(), 0.f, 0), std::runtime_error);
  EXPECT_FALSE(fs::exists(d / "later.safetensors")) << "nothing is written after a failure";
  EXPECT_EQ(w.last_good(), good);
  EXPECT_NO_THROW(load_checkpoint(good));
  fs::remove_all(d);
}

TEST(CheckpointWriter, DestroyingItFinishesTheQueue) {
  const fs::path d = writer_dir();
  const TrainConfig c = tiny_config();
  {
    CheckpointWriter w;
    for (int i = 0; i < 3; ++i)
      w.submit((d / ("q-" + std::to_string(i) + ".safetensors")).string(), c, tagged(base_state(), float(i)), 0.f, 0);
  }
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(load_checkpoint((d / ("q-" + std::to_string(i) + ".safetensors")).string()).state.slabs[0], float(i));
  fs::remove_all(d);
}

}  // namespace
}  // namespace grpo::test
