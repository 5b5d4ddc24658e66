// Faults around a run's files, end to end: a disk that fills mid-run, a read-only run folder, a
// checkpoint cut short anywhere, a checkpoint copied in from a run of another shape. Bad input is
// refused (exit 2, one line, the run folder byte for byte as it was); a disk that fills is
// reported (exit 1, one line naming the last good checkpoint); the checkpoints already written
// stay whole either way.
// The full disk and the read-only folder are real: a small tmpfs and a read-only bind mount, made
// in a mount namespace of the test's own (unshare -m, or unshare -rm without root), which ends
// with the command. Permissions would not do: root writes through a chmod. Where no namespace can
// be made, those two tests skip and say so.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/executor.h"
#include "tests/cli/grpo_run.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

fs::path dir(const std::string& name) {
  return fs::temp_directory_path() / ("grpo_faults_" + std::to_string(::getpid())) / name;
}

int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

// Every file under `d` with its bytes: what "nothing changed" is checked against.
std::map<std::string, std::string> snapshot(const fs::path& d) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (e.is_regular_file()) files[fs::relative(e.path(), d).string()] = slurp(e.path());
  return files;
}

// A finished tiny run in `out`: 4 epochs, ckpt-epoch-000002, best and final (after epoch 4).
void train_run(const fs::path& out, const std::string& extra = "") {
  ASSERT_EQ(sh(kGrpo + " train " + kTiny + " " + extra + " --total-epochs 4 --save-checkpoint-per-num-epoch 2 --out " +
               out.string() + " >/dev/null 2>&1"),
            0);
  ASSERT_TRUE(fs::exists(out / "ckpt-epoch-000002.safetensors"));
}

// How to run a shell script in a mount namespace of its own, or "" where none can be made.
const std::string& private_mounts() {
  static const std::string prefix = [] {
    const std::string cmd = ::geteuid() == 0 ? "unshare -m" : "unshare -rm";
    return sh(cmd + " sh -c 'mount -t tmpfs tmpfs /mnt' >/dev/null 2>&1") == 0 ? cmd : std::string();
  }();
  return prefix;
}

int in_private_mounts(const std::string& script) {
  std::string quoted;
  for (const char c : script) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return sh(private_mounts() + " sh -c '" + quoted + "'");
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kGrpo)) GTEST_SKIP() << "grpo binary not built";
    fs::remove_all(dir(""));
    fs::create_directories(dir(""));
  }
  void TearDown() override { fs::remove_all(dir("")); }
  static void require_private_mounts() {
    if (private_mounts().empty())
      GTEST_SKIP() << "no private mount namespace here (unshare -m / -rm and a tmpfs mount failed): the real "
                      "full-disk and read-only cases need one";
  }
};

// The disk fills while the run writes a checkpoint every epoch (a 128 KiB tmpfs holds a few):
// exit code 1, a last line naming the failed write and the last good checkpoint, no temporary
// left, every checkpoint whole, and the last good one resumes.
TEST_F(Faults, FullDiskMidRunIsReportedAndTheCheckpointsStayWhole) {
  require_private_mounts();
  const fs::path mnt = dir("mnt"), kept = dir("kept");
  fs::create_directories(mnt);
  const int rc =
      in_private_mounts("mount -t tmpfs -o size=128k tmpfs " + mnt.string() + " && { " + kGrpo + " train " + kTiny +
                        " --total-epochs 100000 --save-checkpoint-per-num-epoch 1 --out " + (mnt / "run").string() +
                        " >/dev/null 2>" + dir("err").string() + "; echo $? >" + dir("rc").string() + "; cp -a " +
                        (mnt / "run").string() + " " + kept.string() + "; }");
  ASSERT_EQ(rc, 0) << "the mount or the copy failed";
  EXPECT_EQ(slurp(dir("rc")), "1\n");
  const std::vector<std::string> err = lines_of(slurp(dir("err")));
  ASSERT_FALSE(err.empty());
  const std::string& last = err.back();
  EXPECT_EQ(last.rfind("grpo: fatal: ", 0), 0u) << last;
  EXPECT_TRUE(last.find("No space left on device") != std::string::npos || last.find("disk full") != std::string::npos)
      << last;
  const std::string tag = "last good checkpoint: " + (mnt / "run").string() + "/";
  const size_t at = last.find(tag);
  ASSERT_NE(at, std::string::npos) << last;
  const std::string good = last.substr(at + tag.size());
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(kept)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "a temporary file was left behind: " << name;
    if (e.path().extension() != ".safetensors" || name[0] == '.') continue;
    ++checkpoints;
    EXPECT_NO_THROW(load_checkpoint(e.path().string())) << name;
  }
  EXPECT_GE(checkpoints, 2);
  ASSERT_TRUE(fs::exists(kept / good)) << good;
  const uint32_t epochs = load_checkpoint((kept / good).string()).state.scalars.epoch;
  EXPECT_EQ(sh(kGrpo + " train --backend host --resume " + (kept / good).string() + " --total-epochs " +
               std::to_string(epochs + 1) + " --out " + dir("resumed").string() + " >/dev/null 2>&1"),
            0);
}

// A run folder on a read-only file system: a resume, a new run beside it and a run over it are
// refused before anything (a resume used to fail with exit code 1 rewriting metrics.jsonl).
TEST_F(Faults, ReadOnlyRunFolderIsRefusedBeforeAnyWrite) {
  require_private_mounts();
  const fs::path run = dir("run");
  train_run(run);
  const auto before = snapshot(run);
  std::string script = "mount --bind " + run.string() + " " + run.string() + " && mount -o remount,ro,bind " +
                       run.string() + " " + run.string();
  const std::vector<std::string> cases = {
      "train --backend host --resume " + (run / "ckpt-epoch-000002.safetensors").string() + " --total-epochs 6",
      "train " + kTiny + " --total-epochs 1 --out " + (run / "new").string(),
      "train " + kTiny + " --total-epochs 1 --overwrite --out " + run.string(),
      "train " + kTiny + " --total-epochs 1 --out " + dir("elsewhere").string() + " --metrics " +
          (run / "m.jsonl").string()};
  for (size_t i = 0; i < cases.size(); ++i)
    script += " && { " + kGrpo + " " + cases[i] + " >/dev/null 2>" + dir("err" + std::to_string(i)).string() +
              "; echo $? >" + dir("rc" + std::to_string(i)).string() + "; }";
  ASSERT_EQ(in_private_mounts(script), 0) << "the read-only bind mount failed";
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string err = slurp(dir("err" + std::to_string(i)));
    EXPECT_EQ(slurp(dir("rc" + std::to_string(i))), "2\n") << cases[i] << "\n" << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << cases[i] << "\n" << err;
    EXPECT_NE(err.find("Read-only file system"), std::string::npos) << cases[i] << "\n" << err;
  }
  EXPECT_EQ(snapshot(run), before);
  EXPECT_FALSE(fs::exists(dir("elsewhere"))) << "a refused run created its --out";
}

// A checkpoint cut short anywhere (in its length field, its header, its data) is refused by
// --resume, play and eval with one line; the run folder stays byte for byte as it was.
TEST_F(Faults, CheckpointCutShortIsRefusedAndTheRunFolderUnchanged) {
  const fs::path run = dir("run");
  train_run(run);
  const std::string whole = slurp(run / "final.safetensors");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(whole[i])) << (8 * i);
  const fs::path cut = run / "ckpt-epoch-000006.safetensors";
  for (const uint64_t len : {uint64_t{0}, uint64_t{5}, uint64_t{8}, uint64_t{9}, 8 + n / 2, 8 + n - 1, 8 + n,
                             8 + n + 100, uint64_t(whole.size() - 1)}) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc) << whole.substr(0, len);
    const auto before = snapshot(run);
    for (const std::string cmd :
         {"train --backend host --total-epochs 8 --resume ", "play --fps 0 --checkpoint ", "eval --checkpoint "}) {
      const std::string err_file = dir("err").string();
      EXPECT_EQ(sh(kGrpo + " " + cmd + cut.string() + " >/dev/null 2>" + err_file), 2) << cmd << len;
      const std::string err = slurp(err_file);
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
      EXPECT_NE(err.find(cut.string()), std::string::npos) << err;
    }
    EXPECT_EQ(snapshot(run), before) << "cut at " << len;
  }
}

// A refused resume, whether for its file, its flags or its outputs (every check comes before the
// first write): metrics.jsonl and the checkpoints stay byte for byte as they were.
TEST_F(Faults, RefusedResumeLeavesTheRunFolderAsItWas) {
  const fs::path run = dir("run");
  train_run(run);
  const auto before = snapshot(run);
  const std::string ckpt = (run / "ckpt-epoch-000002.safetensors").string();
  for (const std::string& args :
       {std::string("--total-epochs 2"), std::string("--total-epochs 6 --hidden-size 24"),
        "--total-epochs 6 --metrics " + run.string(), "--total-epochs 6 --metrics " + (run / "no" / "m.jsonl").string(),
        std::string("--total-epochs 6 --lr-rate nan"),
        // The last --resume wins: a folder, and a device that never ends (read without bound once).
        std::string("--total-epochs 6 --resume /"), std::string("--total-epochs 6 --resume /dev/zero"),
        "--total-epochs 6 --out " + (run / "final.safetensors").string()}) {
    const std::string err_file = dir("err").string();
    EXPECT_EQ(sh(kGrpo + " train --backend host --resume " + ckpt + " " + args + " >/dev/null 2>" + err_file), 2)
        << args;
    const std::string err = slurp(err_file);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << args << "\n" << err;
    EXPECT_EQ(snapshot(run), before) << args;
  }
}

// A fresh run whose --metrics names a file that holds metrics (another run's) is refused, as
// an --out that holds a run is: it would truncate them. --overwrite allows it.
TEST_F(Faults, FreshRunDoesNotTruncateAnotherRunsMetrics) {
  const fs::path run = dir("run");
  train_run(run);
  const auto before = snapshot(run);
  const std::string args = "train " + kTiny + " --total-epochs 1 --out " + dir("other").string() + " --metrics " +
                           (run / "metrics.jsonl").string();
  const std::string err_file = dir("err").string();
  EXPECT_EQ(sh(kGrpo + " " + args + " >/dev/null 2>" + err_file), 2);
  const std::string err = slurp(err_file);
  EXPECT_NE(err.find("already holds metrics"), std::string::npos) << err;
  EXPECT_EQ(snapshot(run), before);
  EXPECT_FALSE(fs::exists(dir("other")));
  EXPECT_EQ(sh(kGrpo + " " + args + " --overwrite >/dev/null 2>&1"), 0);
  EXPECT_EQ(lines_of(slurp(run / "metrics.jsonl")).size(), 1u);
}

// A resume the executor refuses (a hidden-4096, 400-step run needs about 17 GiB; grpo runs under
// an 8 GiB address-space limit, which the memory check honours): metrics.jsonl is not touched.
// It used to be trimmed to the checkpoint's epochs before the executor was built.
TEST_F(Faults, ResumeRefusedByTheExecutorLeavesTheMetricsAsTheyWere) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space for its shadow: no ulimit -v can apply";
#endif
  const fs::path run = dir("big");
  fs::create_directories(run);
  TrainConfig c;
  c.hidden_size = 4096;
  c.max_steps = 400;
  c.out_dir = run.string();
  RunState s = initial_state(c);
  s.scalars.epoch = 2;
  const std::string ckpt = (run / checkpoint_file_name(2)).string();
  save_checkpoint(ckpt, c, s, 0.f, 0);
  std::string metrics;
  for (int e = 0; e < 4; ++e) metrics += "{\"epoch\": " + std::to_string(e) + ", \"score\": 0.5}\n";
  std::ofstream(run / "metrics.jsonl", std::ios::binary) << metrics;
  const std::string err_file = dir("err").string();
  EXPECT_EQ(sh("ulimit -v 8388608 && " + kGrpo + " train --backend host --total-epochs 5 --resume " + ckpt +
               " >/dev/null 2>" + err_file),
            2);
  const std::string err = slurp(err_file);
  EXPECT_NE(err.find("host memory"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(slurp(run / "metrics.jsonl"), metrics);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(run)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{checkpoint_file_name(2), "metrics.jsonl"}));
}

// ckpt-epoch-000002 of a hidden-24 run copied over a hidden-20 run's: the file is whole, but
// resuming it in that folder would continue the folder's metrics with another run. Refused,
// naming the field; the folder unchanged. With the other run's flags, the mismatch is the flag's.
TEST_F(Faults, CheckpointFromARunOfAnotherShapeIsRefused) {
  const fs::path a = dir("a"), b = dir("b");
  train_run(a);
  train_run(b, "--hidden-size 24");
  fs::copy_file(b / "ckpt-epoch-000002.safetensors", a / "ckpt-epoch-000002.safetensors",
                fs::copy_options::overwrite_existing);
  const auto before = snapshot(a);
  const std::string err_file = dir("err").string();
  EXPECT_EQ(sh(kGrpo + " train --backend host --total-epochs 6 --resume " +
               (a / "ckpt-epoch-000002.safetensors").string() + " >/dev/null 2>" + err_file),
            2);
  std::string err = slurp(err_file);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("hidden_size 20, this checkpoint 24"), std::string::npos) << err;
  EXPECT_EQ(snapshot(a), before);
  EXPECT_EQ(sh(kGrpo + " train " + kTiny + " --total-epochs 6 --resume " +
               (a / "ckpt-epoch-000002.safetensors").string() + " >/dev/null 2>" + err_file),
            2);
  err = slurp(err_file);
  EXPECT_NE(err.find("--hidden-size 24, not 20"), std::string::npos) << err;
  EXPECT_EQ(snapshot(a), before);
  // The run's own checkpoints still resume there.
  EXPECT_EQ(sh(kGrpo + " train --backend host --total-epochs 6 --resume " + (a / "final.safetensors").string() +
               " >/dev/null 2>&1"),
            0);
}

}  // namespace
}  // namespace grpo::test
