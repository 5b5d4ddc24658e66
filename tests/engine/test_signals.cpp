// engine/signals: a second stop signal exits at once with 128 + its number and removes the
// partial file being written, never a file already renamed onto its final name. Each case runs in
// a child process, since the handlers and _exit are process-wide.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "engine/signals.h"

namespace grpo::test {
namespace {

namespace fs = std::filesystem;

class Signals : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("grpo_signals_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

// Runs `body` in a child process; returns its exit code (128 + signal number if killed). A child
// that returns from `body` exits 0.
int in_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(Signals, FirstSignalIsOnlyRecordedSecondExitsWithItsNumberAndRemovesThePartialFile) {
  const std::string tmp = (root_ / ".x.tmp").string();
  for (const auto& [first, second] : {std::pair{SIGINT, SIGINT}, {SIGTERM, SIGINT}, {SIGINT, SIGTERM}}) {
    const int code = in_child([&, first = first, second = second] {
      install_stop_handlers();
      PartialFile partial;
      const int fd = partial.create(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(90);
      if (::write(fd, "abc", 3) != 3) _exit(91);
      raise(first);
      if (stop_signal() != first) _exit(92);  // the first one only asks to stop
      raise(second);
      _exit(93);  // not reached: the second one ends the process
    });
    EXPECT_EQ(code, 128 + second) << first << " then " << second;
    EXPECT_FALSE(fs::exists(tmp)) << "the partial file is removed";
  }
}

TEST_F(Signals, RenamedFileSurvivesASecondSignal) {
  const std::string tmp = (root_ / ".y.tmp").string();
  const std::string final_path = (root_ / "y").string();
  const int code = in_child([&] {
    install_stop_handlers();
    {
      PartialFile partial;
      const int fd = partial.create(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::close(fd) != 0) _exit(90);
      if (partial.rename_onto(final_path.c_str()) != 0) _exit(91);
      raise(SIGINT);
      if (stop_signal() != SIGINT) _exit(92);
      raise(SIGINT);  // the partial object still lives, but its file is the final one now
    }
    _exit(93);
  });
  EXPECT_EQ(code, 130);
  EXPECT_TRUE(fs::exists(final_path));
  EXPECT_FALSE(fs::exists(tmp));
}

TEST_F(Signals, CreateAndRenameReportFailureThroughErrno) {
  const std::string missing = (root_ / "no" / "such" / "file").string();  // create() keeps the pointer
  PartialFile partial;
  errno = 0;
  EXPECT_LT(partial.create(missing.c_str(), O_WRONLY | O_CREAT, 0644), 0);
  EXPECT_EQ(errno, ENOENT);
  errno = 0;
  EXPECT_NE(partial.rename_onto((root_ / "z").c_str()), 0);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_FALSE(fs::exists(root_ / "z"));
}

}  // namespace
}  // namespace grpo::test
