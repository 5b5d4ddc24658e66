// grpo: trains, plays, evaluates and benchmarks a Fruit Catcher policy (README.md).
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"grpo.cu: raw-CUDA GRPO trainer for the Fruit Catcher game"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "grpo 0.1");
  std::vector<grpo::Command> commands;
  commands.push_back(grpo::add_train_command(app));
  commands.push_back(grpo::add_info_command(app));
  commands.push_back(grpo::add_replay_command(app));
  commands.push_back(grpo::add_play_command(app));
  commands.push_back(grpo::add_eval_command(app));
  commands.push_back(grpo::add_tune_gemm_command(app));
  grpo::check_every_flag_value(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "grpo: error: %s\n", grpo::one_line(e.what()).c_str());
    return 2;
  }
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const grpo::UsageError& e) {
    std::fprintf(stderr, "grpo: error: %s\n", grpo::one_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grpo: fatal: %s\n", grpo::one_line(e.what()).c_str());
    return 1;
  }
  return 0;
}
