// libFuzzer harness: the grpo command line, parsing and validation only. The input is argv after
// "grpo", split at NUL when it holds one (so that a value may hold a newline), else at newline
// (e.g. "train\n--batch-size\n16", as the seeds in fuzz/corpus/flags are). It is parsed by the app
// main.cpp builds (every subcommand's flags and CLI11 checks); nothing runs. A train command
// line is then resolved and validated as `grpo train` does before any work, and eval's game
// flags checked. Refusals (CLI::ParseError, UsageError) are normal; anything else thrown or a
// sanitizer report is a finding. The process works in a private temporary folder, so that
// nothing a parse might create lands in the checkout.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/game_flags.h"
#include "cli/train_flags.h"
#include "core/errors.h"

namespace {

// The private folder, removed when the run ends normally (a crash leaves it, beside its report).
std::string g_dir;
void remove_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/grpo-fuzz-flags-XXXXXX";
  if (!mkdtemp(dir.data()) || chdir(dir.c_str()) != 0) {
    std::perror("fuzz_flags: temporary folder");
    std::abort();
  }
  g_dir = dir;
  std::atexit(remove_dir);
  return 0;
}

namespace {

std::vector<std::string> split_args(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"grpo"};
  const char sep = size > 0 && std::memchr(data, '\0', size) ? '\0' : '\n';
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == sep) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  return args;
}

// CLI11's parse(argc, argv) over the harness's strings.
void parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  app.parse(int(argv.size()), argv.data());
}

// What main.cpp does before dispatching: register every subcommand and parse.
void parse_like_main(const std::vector<std::string>& args) {
  CLI::App app{"grpo"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "grpo 0.1");
  // The commands own the variables their options write into: they must outlive the parse.
  std::vector<grpo::Command> commands;
  commands.push_back(grpo::add_train_command(app));
  commands.push_back(grpo::add_info_command(app));
  commands.push_back(grpo::add_replay_command(app));
  commands.push_back(grpo::add_play_command(app));
  commands.push_back(grpo::add_eval_command(app));
  parse(app, args);
}

// `grpo train`'s resolve and validate step (cli/train_flags.h), on the same command line; the
// flags of train's own (--overwrite, --resume) pass as extras.
void resolve_train(const std::vector<std::string>& args) {
  CLI::App app{"grpo"};
  CLI::App* sub = app.add_subcommand("train");
  sub->allow_extras();
  grpo::TrainFlags f;
  grpo::add_train_flags(*sub, f);
  parse(app, args);
  (void)grpo::resolve_train_flags(*sub, f);
}

// eval's game flags, validated as eval does for a game without a checkpoint.
void validate_eval_game(const std::vector<std::string>& args) {
  CLI::App app{"grpo"};
  CLI::App* sub = app.add_subcommand("eval");
  sub->allow_extras();
  grpo::GameConfig g;
  grpo::add_game_flags(*sub, g);
  parse(app, args);
  g.validate();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = split_args(data, size);
  try {
    parse_like_main(args);
  } catch (const CLI::ParseError&) {
    return 0;
  } catch (const grpo::UsageError&) {
    return 0;
  }
  try {
    if (args.size() > 1 && args[1] == "train") resolve_train(args);
    if (args.size() > 1 && args[1] == "eval") validate_eval_game(args);
  } catch (const CLI::ParseError&) {
  } catch (const grpo::UsageError&) {
  }
  return 0;
}
