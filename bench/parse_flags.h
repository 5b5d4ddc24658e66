// The bench programs' command lines parsed as grpo's are (cli/main.cpp): help prints and exits
// 0; a bad flag or value is one line on stderr and exit code 2, before anything runs.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>

#include "core/errors.h"

namespace grpo::bench {

// The exit code to return now, or nothing when the program should run.
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "%s: error: %s\n", program, one_line(e.what()).c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace grpo::bench
