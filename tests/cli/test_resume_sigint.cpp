// `grpo train` stopped from outside, end to end: SIGINT (Ctrl-C) or SIGTERM finishes the epoch,
// writes a checkpoint and exits 130 or 143; --resume from it reaches the same final checkpoint
// as an uninterrupted run, bit for bit; a second signal exits at once and leaves only whole
// checkpoints behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "engine/checkpoint/checkpoint.h"
#include "tests/cli/grpo_run.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

fs::path dir(const char* name) {
  return fs::temp_directory_path() / ("grpo_sigint_" + std::to_string(::getpid())) / name;
}

size_t lines(const fs::path& p) {
  std::ifstream in(p);
  size_t n = 0;
  std::string l;
  while (std::getline(in, l)) ++n;
  return n;
}

// Starts `grpo train ... --out out` in the background (output to out.log).
pid_t start_train(const fs::path& out, const std::string& extra) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = "exec " + kGrpo + " train " + kTiny + " " + extra + " --out " + out.string() + " >" +
                            out.string() + ".log 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Until the file has n lines, or the process `pid` has ended, or 30 s passed.
bool wait_for_lines(const fs::path& p, size_t n, pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    if (lines(p) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// Until `p` exists, or the process `pid` has ended, or 30 s passed.
bool wait_for_file(const fs::path& p, pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    if (fs::exists(p)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool same_state(const Checkpoint& a, const Checkpoint& b) {
  return a.state.slabs == b.state.slabs && std::memcmp(&a.state.scalars, &b.state.scalars, sizeof(TrainScalars)) == 0 &&
         a.best_score == b.best_score && a.best_epoch == b.best_epoch;
}

class Sigint : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kGrpo)) GTEST_SKIP() << "grpo binary not built";
    fs::remove_all(dir(""));
    fs::create_directories(dir(""));
  }
  void TearDown() override { fs::remove_all(dir("")); }
};

// The first signal `signo`: the run stops after an epoch with a checkpoint and 128 + signo, and
// resuming from that checkpoint ends where an uninterrupted run ends.
void stop_checkpoint_and_resume(int signo) {
  const fs::path run = dir("run");
  const pid_t pid = start_train(run, "--total-epochs 100000 --save-checkpoint-per-num-epoch -1");
  if (!wait_for_lines(run / "metrics.jsonl", 3, pid)) {
    kill(pid, SIGKILL);
    wait_exit(pid);
    FAIL() << "training did not start";
  }
  kill(pid, signo);
  ASSERT_EQ(wait_exit(pid), 128 + signo);
  // The checkpoint holds exactly the epochs the metrics report.
  const size_t done = lines(run / "metrics.jsonl");
  const fs::path ckpt = run / checkpoint_file_name(uint32_t(done));
  ASSERT_TRUE(fs::exists(ckpt)) << ckpt;
  const Checkpoint k = load_checkpoint(ckpt.string());
  EXPECT_EQ(k.state.scalars.epoch, done);
  EXPECT_FALSE(fs::exists(run / "final.safetensors"));

  const int total = int(done) + 4;
  ASSERT_EQ(sh(kGrpo + " train --backend host --resume " + ckpt.string() + " --total-epochs " + std::to_string(total) +
               " >/dev/null 2>&1"),
            0);
  ASSERT_EQ(sh(kGrpo + " train " + kTiny + " --save-checkpoint-per-num-epoch -1 --total-epochs " +
               std::to_string(total) + " --out " + dir("straight").string() + " >/dev/null 2>&1"),
            0);
  const Checkpoint resumed = load_checkpoint((run / "final.safetensors").string());
  const Checkpoint straight = load_checkpoint((dir("straight") / "final.safetensors").string());
  EXPECT_TRUE(same_state(resumed, straight));
  EXPECT_EQ(resumed.state.scalars.epoch, uint32_t(total));
  EXPECT_EQ(lines(run / "metrics.jsonl"), size_t(total)) << "resumed metrics continue the file";
}

TEST_F(Sigint, CheckpointsExits130AndResumesToTheUninterruptedResult) { stop_checkpoint_and_resume(SIGINT); }

TEST_F(Sigint, SigtermCheckpointsExits143AndResumesToTheUninterruptedResult) { stop_checkpoint_and_resume(SIGTERM); }

// Two signals in a row: the second ends the process at once with 128 + its number, and every
// checkpoint left behind is whole.
void second_signal_exits_at_once(int first, int second) {
  const fs::path run = dir("run");
  // Epochs of about half a second on one core: the window between the two signals. Checkpoints
  // are written on a thread of their own, so the metrics can run ahead of them: the first
  // signal waits for a whole checkpoint on disk.
  const pid_t pid =
      start_train(run, "--total-epochs 100000 --save-checkpoint-per-num-epoch 1 --hidden-size 512 --max-steps 1000");
  if (!wait_for_lines(run / "metrics.jsonl", 2, pid) || !wait_for_file(run / checkpoint_file_name(1), pid)) {
    kill(pid, SIGKILL);
    wait_exit(pid);
    FAIL() << "training did not start";
  }
  kill(pid, first);
  // The second signal must find the first one handled, not merely pending (pending signals are
  // delivered lowest number first), and the epoch still running: hence the larger policy.
  const fs::path log = run.string() + ".log";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string text;
  while (text.find("finishing this epoch") == std::string::npos && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::ifstream in(log);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_NE(text.find("finishing this epoch"), std::string::npos) << text;
  kill(pid, second);
  EXPECT_EQ(wait_exit(pid), 128 + second);
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(run)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "a temporary file under its final name? " << name;
    if (e.path().extension() != ".safetensors" || name[0] == '.') continue;
    ++checkpoints;
    EXPECT_NO_THROW(load_checkpoint(e.path().string())) << name;
  }
  EXPECT_GT(checkpoints, 0);
}

TEST_F(Sigint, SecondSigintExitsAtOnceLeavingWholeCheckpoints) { second_signal_exits_at_once(SIGINT, SIGINT); }

TEST_F(Sigint, SigintAfterSigtermExitsAtOnceLeavingWholeCheckpoints) { second_signal_exits_at_once(SIGTERM, SIGINT); }

TEST_F(Sigint, SecondSigtermExitsAtOnceLeavingWholeCheckpoints) { second_signal_exits_at_once(SIGTERM, SIGTERM); }

TEST_F(Sigint, BadResumeFileIsRefusedAndNothingWritten) {
  const fs::path bad = dir("bad.safetensors");
  std::ofstream(bad) << "not a checkpoint";
  const fs::path out = dir("out");
  EXPECT_EQ(sh(kGrpo + " train --backend host --resume " + bad.string() + " --out " + out.string() + " 2>" +
               dir("err").string() + " >/dev/null"),
            2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(lines(dir("err")), 1u);
  std::ifstream in(bad);
  std::string s;
  std::getline(in, s);
  EXPECT_EQ(s, "not a checkpoint");
}

}  // namespace
}  // namespace grpo::test
