// `grpo train`: parse and validate every flag before any work, pick the executor, run the loop,
// and report: a live progress line on a terminal, plain lines otherwise, JSON lines in the
// metrics file, a summary at the end.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/commands.h"
#include "engine/errors.h"
#include "engine/executor.h"
#include "engine/train_flags.h"
#include "engine/trainer.h"

namespace grpo {

namespace {

std::string default_out_dir() {
  const std::time_t now = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", std::localtime(&now));
  return buf;
}

std::string duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = long(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

struct TrainCommandState {
  TrainFlags flags;
  bool overwrite = false;
};

int run_train(CLI::App& app, const TrainCommandState& st) {
  const bool out_given = app.count("--out") > 0;
  TrainFlags f = st.flags;
  if (!out_given) f.cfg.out_dir = default_out_dir();
  const TrainConfig c = resolve_train_flags(app, f);

  namespace fs = std::filesystem;
  const fs::path out(c.out_dir);
  if (fs::exists(out / "metrics.jsonl") && !st.overwrite)
    throw UsageError("--out " + c.out_dir + " already holds a run (metrics.jsonl): choose another --out or pass --overwrite");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UsageError("--out " + c.out_dir + ": cannot create the directory: " + ec.message());
  std::ofstream metrics(c.metrics_path, std::ios::trunc);
  if (!metrics) throw UsageError("--metrics " + c.metrics_path + ": cannot open for writing");

  std::unique_ptr<Executor> ex = make_executor(c);
  ex->set_state(initial_state(c));
  const bool tty = isatty(fileno(stderr));
  std::fprintf(stderr, "grpo train: %s | hidden %d, %d games (%d groups x %d), %d steps, %d epochs, lr %g, seed %llu\n",
               ex->describe().c_str(), c.hidden_size, c.games(), c.game.groups(), c.batch_size, c.max_steps,
               c.total_epochs, double(c.lr), static_cast<unsigned long long>(c.seed));
  std::fprintf(stderr, "grpo train: writing %s\n", c.metrics_path.c_str());

  const uint32_t log_every = std::max(1, c.total_epochs / 100);
  TrainHooks hooks;
  hooks.on_epoch = [&](const EpochReport& r) {
    metrics << metrics_json(r, c) << '\n';
    metrics.flush();
    if (!metrics) throw std::runtime_error("writing " + c.metrics_path + " failed (disk full?)");
    const double eta = (c.total_epochs - 1 - double(r.m.epoch)) / std::max(r.epochs_per_s, 1e-9);
    char line[256];
    std::snprintf(line, sizeof line, "epoch %u/%d  score %7.3f  best %7.3f  reward %7.3f  loss %9.5f  %.2f epochs/s  ETA %s",
                  r.m.epoch + 1, c.total_epochs, double(r.m.score), double(r.best_score), double(r.m.reward),
                  double(r.m.loss), r.epochs_per_s, duration(eta).c_str());
    if (tty)
      std::fprintf(stderr, "\r\033[K%s", line);
    else if (r.m.epoch % log_every == 0 || r.m.epoch + 1 == uint32_t(c.total_epochs))
      std::fprintf(stderr, "%s\n", line);
  };
  const TrainResult res = train_loop(c, *ex, 0, -std::numeric_limits<float>::infinity(), 0, hooks);
  if (tty) std::fprintf(stderr, "\n");

  std::printf("trained epochs %u..%u (%u) in %s: best score %.3f at epoch %u%s\n", res.first_epoch, res.last_epoch,
              res.epochs_run, duration(res.seconds).c_str(), double(res.best_score), res.best_epoch,
              res.early_stopped ? " (early stop: no better score for --patience epochs)" : "");
  if (res.nonfinite) {
    std::fprintf(stderr, "grpo train: stopped at epoch %u: the loss or the gradients are not finite\n", res.last_epoch);
    return 1;
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto st = std::make_shared<TrainCommandState>();
  CLI::App* sub = app.add_subcommand("train", "train a policy (spec/training.md, --algo reference)");
  add_train_flags(*sub, st->flags);
  sub->add_flag("--overwrite", st->overwrite, "reuse an --out directory that already holds a run");
  return {sub, [sub, st] { return run_train(*sub, *st); }};
}

}  // namespace grpo
