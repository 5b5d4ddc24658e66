#include "engine/checkpoint/io.h"
#include "engine/signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace grpo {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path final_path(path);
  fs::path dir = final_path.parent_path();
  if (dir.empty()) dir = ".";
  // Same directory as the target, so rename() is atomic (one file system); the pid keeps two
  // writers (a second grpo on the same --out) from sharing a temporary.
  const std::string tmp =
      (dir / ("." + final_path.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  PartialFile partial;  // a second Ctrl-C or SIGTERM removes it
  const int fd = partial.create(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", tmp, errno);
  auto abandon = [&](const char* what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what, path, err);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;  // SIGINT lands here: finish the write
    if (n <= 0) abandon("writing", n < 0 ? errno : ENOSPC);
    done += size_t(n);
  }
  if (::fsync(fd) != 0) abandon("flushing (fsync)", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("closing", path, err);
  }
  if (partial.rename_onto(path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("renaming the temporary file onto", path, err);
  }
  // The rename itself is durable only once the directory entry is on disk.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("cannot open the directory of", path, errno);
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) fail("flushing (fsync) the directory of", path, err);  // EINVAL: fs without dir fsync
}

}  // namespace grpo
