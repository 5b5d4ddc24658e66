// `grpo replay` (cli/commands.h): the host backend always, the device backend where the
// flavour has CUDA (gpu, or the emulator in simt); in the host flavour --backend cuda is refused.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/errors.h"
#include "core/json_excerpt.h"
#include "env/replay.h"

namespace grpo {

namespace {

using nlohmann::json;

// `cuda` is null in the host flavour, where --backend cuda is refused with a UsageError.
Command make_replay_command(CLI::App& app, ReplayBackend cuda) {
  struct Options {
    std::string input = "-";
    std::string backend = "host";
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("replay", "conformance interface: replay a game document (JSON) step by step");
  sub->add_option("--input", opt->input, "JSON document to replay ('-' = stdin)")->capture_default_str();
  sub->add_option("--backend", opt->backend, "executor: host or cuda")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  return {sub, [opt, cuda]() {
            ReplayBackend backend = replay_host;
            if (opt->backend == "cuda") {
              if (!cuda)
                throw UsageError("--backend cuda: this grpo was built without CUDA (host flavour); use --backend host");
              backend = cuda;
            }
            if (opt->input == "-") {
              run_replay(std::cin, std::cout, backend);
            } else {
              std::error_code ec;
              if (std::filesystem::is_directory(opt->input, ec))
                throw UsageError("--input: " + json_excerpt(json(opt->input)) + " is a folder, not a JSON file");
              std::ifstream f(opt->input);
              if (!f) throw UsageError("--input: cannot open " + json_excerpt(json(opt->input)));
              run_replay(f, std::cout, backend);
            }
            return 0;
          }};
}

}  // namespace

Command add_replay_command(CLI::App& app) {
#if defined(GRPO_HAVE_CUDA)
  return make_replay_command(app, replay_cuda);
#else
  return make_replay_command(app, nullptr);
#endif
}

}  // namespace grpo
