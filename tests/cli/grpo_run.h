// Runs the built grpo binary for the CLI tests: exit code, standard output and standard error.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace grpo::test {

inline const std::string kGrpo = std::string(GRPO_BINARY_DIR) + "/grpo";
// A training run small enough to finish in a second: the run-folder tests' configuration.
inline const std::string kTiny =
    "--backend host --hidden-size 20 --batch-size 2 --max-steps 8 --screen-width 6 --screen-height 6 "
    "--min-interval-steps 2 --lr-rate 3e-3 --seed 99 --patience 0";

struct Out {
  int code;
  std::string out, err;
};

// `grpo ARGS` through the shell (ARGS may quote); stderr goes through a file named by the pid.
inline Out run(const std::string& args) {
  namespace fs = std::filesystem;
  const fs::path e = fs::temp_directory_path() / ("grpo_pe_err_" + std::to_string(::getpid()));
  Out r{-1, "", ""};
  FILE* p = ::popen((kGrpo + " " + args + " 2>" + e.string()).c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(e);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove(e);
  return r;
}

}  // namespace grpo::test
