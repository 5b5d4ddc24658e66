// `grpo tune-gemm`: on this machine's GPU, one epoch of a configuration (the train flags), then
// every product it sent to cuBLASLt timed at each of the heuristic's first --ranks answers; writes
// the tuning file `grpo train --gemm-tuning` reads (engine/cuda/gemm_tuning.h) and prints, per
// product, the answer it takes and what that saves.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/train_flags.h"
#include "core/errors.h"
#include "engine/checkpoint/io.h"
#include "engine/executor.h"
#if defined(GRPO_HAVE_CUDA)
#include "engine/cuda/gemm_tuning.h"
#endif

namespace grpo {

namespace {

struct TuneState {
  TrainFlags flags;
  std::string write;
  int ranks = 8;
  std::vector<int> splits = {2, 3, 4, 6, 8};  // of K, with the first answer
  int repeats = 10;
  double min_gain = 0.03;
};

// The file to write: not a folder, in a folder that exists and accepts files.
void require_output_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) throw UsageError("--write " + path + " is a folder, not a file");
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw UsageError("--write " + path + ": its folder " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError("--write " + path + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
}

int run_tune(CLI::App& app, const TuneState& st) {
  const TrainConfig c = resolve_train_flags(app, st.flags);
  if (!c.gemm_tuning.empty())
    throw UsageError("--gemm-tuning: tune-gemm writes a tuning file (--write), it reads none");
  // The run's own flags: tune-gemm runs one epoch and writes only --write.
  for (const char* flag : {"--out", "--metrics", "--total-epochs", "--patience", "--save-checkpoint-per-num-epoch"})
    if (app.count(flag) > 0)
      throw UsageError(std::string(flag) + " applies to grpo train: tune-gemm writes only --write");
  if (c.backend == Backend::Host) throw UsageError("--backend host: tune-gemm times cuBLASLt, on the CUDA executor");
  require_output_file(st.write);
  std::string why;
  if (!cuda_device_available(&why)) throw UsageError("grpo tune-gemm needs a GPU: " + why);
#if defined(GRPO_HAVE_CUDA)
  std::vector<int> splits = st.splits;
  splits.erase(std::remove(splits.begin(), splits.end(), 0), splits.end());
  const std::string text = tune_gemm(c, st.ranks, splits, st.repeats, st.min_gain, [&st, &splits] {
    std::fprintf(stderr,
                 "grpo tune-gemm: one epoch, then each cuBLASLt product at %d answers and the first with K in %zu "
                 "ways of splitting it, %d timed calls each\n",
                 st.ranks, splits.size(), st.repeats);
  });
  write_file_atomic(st.write, text);
  const nlohmann::json j = nlohmann::json::parse(text);
  std::printf("device             %s, cuBLASLt %lld\n", j["device"].get<std::string>().c_str(),
              j["cublaslt_version"].get<long long>());
  int retuned = 0;
  for (const nlohmann::json& p : j["products"]) {
    const auto& s = p["shape"];
    const int rank = p["rank"].get<int>(), split = p["split"].get<int>();
    const auto us = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
    double taken = us(p["us"][size_t(rank)]);
    for (size_t i = 0; split > 0 && i < p["splits"].size(); ++i)
      if (p["splits"][i].get<int>() == split) taken = us(p["split_us"][i]);
    std::printf("product            %s%s %dx%dx%d%s: rank %d%s, %.1f us (rank 0: %.1f us)\n",
                s[0].get<int>() ? "T" : "N", s[1].get<int>() ? "T" : "N", s[2].get<int>(), s[3].get<int>(),
                s[4].get<int>(), s[11].get<int>() ? " bf16" : "", rank,
                split > 0 ? (", K in " + std::to_string(split) + " splits").c_str() : "", taken, us(p["us"][0]));
    retuned += rank != 0 || split != 0;
  }
  std::printf(
      "wrote              %s: %zu products, %d take another answer than the heuristic's first (at least "
      "%.0f%% faster)\n",
      st.write.c_str(), j["products"].size(), retuned, 100.0 * st.min_gain);
#endif
  return 0;
}

}  // namespace

Command add_tune_gemm_command(CLI::App& app) {
  auto st = std::make_shared<TuneState>();
  CLI::App* sub = app.add_subcommand(
      "tune-gemm", "time cuBLASLt's answers for a configuration's products on this GPU (takes the train flags)");
  add_train_flags(*sub, st->flags);
  sub->add_option("--write", st->write, "the tuning file to write (for grpo train --gemm-tuning)")->required();
  sub->add_option("--ranks", st->ranks, "the heuristic's first answers to time per product")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--splits", st->splits, "splits of K tried with the first answer (comma-separated; none: --splits 0)")
      ->delimiter(',')
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  sub->add_option("--repeats", st->repeats, "timed calls per answer (the median counts)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  sub->add_option("--min-gain", st->min_gain,
                  "take another answer only where it is at least this fraction faster than the first")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  return {sub, [sub, st] { return run_tune(*sub, *st); }};
}

}  // namespace grpo
