// Subcommands of the grpo binary. Each module registers its own subcommand on the CLI11 app and
// returns the function that runs it; main.cpp only parses, dispatches and maps errors to exit codes.
#pragma once
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace grpo {

struct Command {
  CLI::App* app;
  std::function<int()> run;  // returns the process exit code; throws UsageError for bad input
};

Command add_replay_command(CLI::App& app);     // cli/replay_command.cpp
Command add_train_command(CLI::App& app);      // cli/train_command.cpp
Command add_info_command(CLI::App& app);       // cli/info_command.cpp
Command add_play_command(CLI::App& app);       // cli/play_command.cpp
Command add_eval_command(CLI::App& app);       // cli/eval_command.cpp
Command add_tune_gemm_command(CLI::App& app);  // cli/tune_gemm_command.cpp

}  // namespace grpo
