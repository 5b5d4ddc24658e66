// engine/signals: a second stop signal exits at once with 128 + its number and removes the
// partial file being written, never a file already renamed onto its final name. Each case runs in
// a child process, since the handlers and _exit are process-wide.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/syscall.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

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
      // A new file under the old temporary name: the partial file is forgotten, so it stays.
      const int other = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (other < 0 || ::close(other) != 0) _exit(94);
      raise(SIGINT);
      if (stop_signal() != SIGINT) _exit(92);
      raise(SIGINT);  // the partial object still lives, but its file is the final one now
    }
    _exit(93);
  });
  EXPECT_EQ(code, 130);
  EXPECT_TRUE(fs::exists(final_path));
  EXPECT_TRUE(fs::exists(tmp)) << "a second signal after the rename removed a file it no longer owns";
}

// Thread's status letter (R, S, D, ...) from /proc.
char thread_state(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close_paren = all.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= all.size() ? '?' : all[close_paren + 2];
}

// The race the step lock closes: another thread is inside create() (blocked opening a FIFO that
// has no reader yet) when the second signal arrives on the main thread. The handler must wait
// for the creation to finish and then remove the file, not remove the name first and let the
// creation go on (which left the temporary behind). While the handler waits, the FIFO is still
// there for this process to open; then the child exits 130 and the FIFO is gone.
TEST_F(Signals, SecondSignalWaitsForACreationOnAnotherThread) {
  const std::string tmp = (root_ / ".fifo.tmp").string();
  const std::string ready = (root_ / "ready").string();
  ASSERT_EQ(::mkfifo(tmp.c_str(), 0644), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    install_stop_handlers();
    std::atomic<pid_t> tid{0};
    std::thread creator([&] {
      tid = pid_t(::syscall(SYS_gettid));
      PartialFile partial;
      (void)partial.create(tmp.c_str(), O_WRONLY | O_CREAT, 0644);  // blocks until a reader comes
      pause();                                                      // the handler ends the process
    });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (tid == 0 || thread_state(tid) != 'S') {  // asleep: in the open() of create()
      if (std::chrono::steady_clock::now() > give_up) _exit(95);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    raise(SIGINT);
    std::ofstream(ready) << "1";
    raise(SIGINT);  // spins until the creator's open returns
    _exit(93);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(ready) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the second raise, most likely done
  const int reader = ::open(tmp.c_str(), O_RDONLY | O_NONBLOCK);
  EXPECT_GE(reader, 0) << "the partial file was removed while its creation was still going on";
  int status = 0;
  if (reader < 0) {
    kill(pid, SIGKILL);  // the code under test left the creator blocked: end the child here
    waitpid(pid, &status, 0);
    return;
  }
  waitpid(pid, &status, 0);
  ::close(reader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  EXPECT_FALSE(fs::exists(tmp)) << "the partial file is removed";
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
