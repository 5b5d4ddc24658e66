// `grpo train`: parse and validate every flag before any work, pick the executor, run the loop,
// and report: a live progress line on a terminal, plain lines otherwise, JSON lines in the
// metrics file, a summary at the end.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/writer.h"
#include "engine/checkpoint/config.h"
#include "engine/checkpoint/resume.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "engine/executor.h"
#include "engine/profiler.h"
#include "engine/signals.h"
#include "cli/train_flags.h"
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

// Refuses, before anything is created or written, a place this run could not write in: the
// nearest existing folder on the way to `p` must accept new files (not a read-only file system,
// not a folder without write permission; access() reports EROFS even for root).
void require_writable_folder(const std::filesystem::path& p, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path probe = p;
  while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
  if (probe.empty()) probe = ".";
  if (!fs::is_directory(probe, ec)) throw UsageError(what + ": " + probe.string() + " is not a folder");
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    throw UsageError(what + ": cannot write in " + probe.string() + ": " + std::strerror(errno));
}

// --metrics: a file (not a folder) that can be written, in the run's folder or in one that exists.
void require_metrics_path(const TrainConfig& c) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path m(c.metrics_path);
  const std::string what = "--metrics " + c.metrics_path;
  const fs::file_status st = fs::status(m, ec);
  if (fs::is_directory(st)) throw UsageError(what + " is a folder, not a file");
  if (fs::exists(st)) {
    if (::access(m.c_str(), W_OK) != 0) throw UsageError(what + ": cannot write: " + std::strerror(errno));
    return;
  }
  const fs::path dir = m.parent_path().empty() ? fs::path(".") : m.parent_path();
  if (!fs::is_directory(dir, ec) && fs::weakly_canonical(dir, ec) != fs::weakly_canonical(c.out_dir, ec))
    throw UsageError(what + ": its folder " + dir.string() + " does not exist");
  require_writable_folder(dir, what);
}

// A checkpoint copied in from another run (another network, game or algorithm) would continue
// this folder's metrics with a different run. The folder's best.safetensors, written by every run
// after its first epoch, says which run the folder holds; only the run's own settings may differ.
void require_same_run(const std::string& resume, const TrainConfig& c, const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path best = out / "best.safetensors";
  if (!fs::exists(best, ec) || fs::equivalent(best, resume, ec)) return;
  nlohmann::ordered_json mine = config_to_json(c), folder = config_to_json(load_checkpoint_config(best.string()));
  for (const char* own : {"total_epochs", "patience", "checkpoint_every", "backend", "use_graph", "precision",
                          "out_dir", "metrics_path"}) {
    mine.erase(own);
    folder.erase(own);
  }
  mine["game"].erase("win_score");
  mine["game"].erase("fail_score");
  folder["game"].erase("win_score");
  folder["game"].erase("fail_score");
  for (auto& [key, value] : mine.items()) {
    if (folder[key] == value) continue;
    throw UsageError("--resume " + resume + ": the run in " + out.string() + " (best.safetensors) has " + key + " " +
                     folder[key].dump() + ", this checkpoint " + value.dump() +
                     ": it belongs to another run (resume it with another --out)");
  }
}

struct TrainCommandState {
  TrainFlags flags;
  bool overwrite = false;
  std::string resume;
};

// Where checkpoints go and which one is the last good one (reported when a run fails).
// The state is copied out here (get_state waits for the epochs in flight); the file is written
// by the writer's thread while the loop goes on (engine/checkpoint/writer.h).
struct Saver {
  const TrainConfig& c;
  Executor& ex;
  CheckpointWriter writer;

  Saver(const TrainConfig& config, Executor& executor, const std::string& resumed_from)
      : c(config), ex(executor), writer(resumed_from) {}
  std::string save(const std::string& name, float best_score, uint32_t best_epoch) {
    const std::string path = (std::filesystem::path(c.out_dir) / name).string();
    writer.submit(path, c, ex.get_state(), best_score, best_epoch);
    return path;
  }
  std::string last_good() const { return writer.last_good(); }

  // best.safetensors from the executor's snapshot of the best epoch (kernels/best_snapshot.h):
  // written at the checkpoints and at the end, only when a new best was seen since the last.
  bool best_pending = false;
  void save_best(const TrainResult& r) {
    if (!best_pending) return;
    RunState s = ex.best_state();
    if (s.scalars.epoch != r.best_epoch || s.scalars.best_score != r.best_score)
      throw std::logic_error("the best-state snapshot (epoch " + std::to_string(s.scalars.epoch) +
                             ") is not the best epoch the trainer saw (" + std::to_string(r.best_epoch) + ")");
    writer.submit((std::filesystem::path(c.out_dir) / "best.safetensors").string(), c, std::move(s), r.best_score,
                  r.best_epoch);
    best_pending = false;
  }
};

int run_train(CLI::App& app, const TrainCommandState& st) {
  namespace fs = std::filesystem;
  const bool out_given = app.count("--out") > 0;
  auto given = [&](const char* name) { return app.count(name) > 0; };
  TrainFlags f = st.flags;
  if (!out_given) f.cfg.out_dir = default_out_dir();
  TrainConfig c = resolve_train_flags(app, f);

  // --resume: the checkpoint is read and checked in full before anything is created or written.
  const bool resuming = !st.resume.empty();
  Checkpoint ck;
  if (resuming) {
    ck = load_checkpoint(st.resume);
    if (!ck.has_optimizer)
      throw UsageError("--resume " + st.resume +
                       ": the file holds parameters only (no AdamW moments): it cannot be resumed");
    const fs::path dir = fs::path(st.resume).parent_path();
    c = resume_config(st.resume, ck, c, given, dir.empty() ? "." : dir.string());
  }
  const uint32_t start_epoch = resuming ? ck.state.scalars.epoch : 0;

  const fs::path out(c.out_dir);
  std::error_code ec;
  // A path the system cannot resolve (a loop of symbolic links, a name too long) is the user's
  // to fix, refused here before anything runs; a path that does not exist yet is created below.
  const fs::file_status out_status = fs::status(out, ec);
  if (ec && out_status.type() != fs::file_type::not_found) throw UsageError("--out " + c.out_dir + ": " + ec.message());
  if (fs::exists(out_status) && !fs::is_directory(out_status))
    throw UsageError("--out " + c.out_dir + " is not a folder");
  ec.clear();
  require_writable_folder(out, "--out " + c.out_dir);
  require_metrics_path(c);
  // A resume continues the run of its own directory; anywhere else an existing run is protected.
  const bool same_run =
      resuming &&
      fs::equivalent(out, fs::path(st.resume).parent_path().empty() ? fs::path(".") : fs::path(st.resume).parent_path(),
                     ec);
  if (fs::exists(out / "metrics.jsonl", ec) && !st.overwrite && !same_run)
    throw UsageError("--out " + c.out_dir +
                     " already holds a run (metrics.jsonl): choose another --out or pass --overwrite");
  // The same for a --metrics file elsewhere: a fresh run would truncate it.
  if (!resuming && !st.overwrite && fs::is_regular_file(c.metrics_path, ec) && fs::file_size(c.metrics_path, ec) > 0)
    throw UsageError("--metrics " + c.metrics_path + " already holds metrics: choose another file or pass --overwrite");
  if (same_run) require_same_run(st.resume, c, out);
  if (resuming && start_epoch >= uint32_t(c.total_epochs))
    throw UsageError("--resume " + st.resume + ": the checkpoint has already run " + std::to_string(start_epoch) +
                     " epochs: pass a larger --total-epochs (now " + std::to_string(c.total_epochs) + ")");
  // The executor is built (and a configuration too large for the device refused) before
  // anything is created or written.
  std::unique_ptr<Executor> ex = make_executor(c);
  fs::create_directories(out, ec);
  if (ec) throw UsageError("--out " + c.out_dir + ": cannot create the directory: " + ec.message());
  // A resumed run's metrics continue the file; epochs the checkpoint does not hold are redone.
  if (resuming) trim_metrics(c.metrics_path, start_epoch);
  std::ofstream metrics(c.metrics_path, resuming ? std::ios::app : std::ios::trunc);
  if (!metrics) throw UsageError("--metrics " + c.metrics_path + ": cannot open for writing");

  ex->set_state(resuming ? ck.state : initial_state(c));
  std::vector<float>().swap(ck.state.slabs);  // the executor holds its own copy now
  const bool tty = isatty(fileno(stderr));
  std::fprintf(stderr,
               "grpo train: %s | hidden %d, %d games (%d groups x %d), %d steps, %d epochs, lr %g (%s), seed %llu\n",
               ex->describe().c_str(), c.hidden_size, c.games(), c.game.groups(), c.batch_size, c.max_steps,
               c.total_epochs, double(c.lr), lr_schedule_name(c.lr_schedule), static_cast<unsigned long long>(c.seed));
  if (c.algo == Algo::Grpo)
    std::fprintf(
        stderr,
        "grpo train: --algo grpo | %d passes x %d slices per epoch, clip %g, kl-beta %g, gamma %g, dropout %g, "
        "entropy %g\n",
        c.ppo_epochs, c.minibatches, double(c.clip), double(c.kl_beta), double(c.gamma), double(c.dropout),
        double(c.entropy_coef));
  if (resuming) std::fprintf(stderr, "grpo train: resuming %s at epoch %u\n", st.resume.c_str(), start_epoch);
  std::fprintf(stderr, "grpo train: writing %s and checkpoints in %s\n", c.metrics_path.c_str(), c.out_dir.c_str());

  Saver saver(c, *ex, resuming ? st.resume : "");
  const uint32_t log_every = std::max(1, c.total_epochs / 100);
  TrainHooks hooks;
  hooks.on_epoch = [&](const EpochReport& r) {
    metrics << metrics_json(r, c) << '\n';
    metrics.flush();
    if (!metrics) throw std::runtime_error("writing " + c.metrics_path + " failed (disk full?)");
    const double eta = (c.total_epochs - 1 - double(r.m.epoch)) / std::max(r.epochs_per_s, 1e-9);
    char line[256];
    std::snprintf(line, sizeof line,
                  "epoch %u/%d  score %7.3f  best %7.3f  reward %7.3f  loss %9.5f  %.2f epochs/s  ETA %s",
                  r.m.epoch + 1, c.total_epochs, double(r.m.score), double(r.best_score), double(r.m.reward),
                  double(r.m.loss), r.epochs_per_s, duration(eta).c_str());
    if (tty)
      std::fprintf(stderr, "\r\033[K%s", line);
    else if (r.m.epoch % log_every == 0 || r.m.epoch + 1 == uint32_t(c.total_epochs))
      std::fprintf(stderr, "%s\n", line);
  };
  // best.safetensors holds the state that played the best epoch e, as a checkpoint taken before e
  // would: its parameters, moments and scalars (epoch e), kept by the executor without a pause
  // (kernels/best_snapshot.h) and written with the next checkpoint or at the end. A resume from
  // it replays epoch e exactly.
  hooks.on_best = [&](const EpochReport&) { saver.best_pending = true; };
  ProfileRange profile(c.profile_first, c.profile_last, ex->on_device());
  if (c.profile_first >= 0 && !ex->on_device())
    std::fprintf(stderr, "grpo train: --profile-epochs has no effect on the host executor\n");
  hooks.before_launch = [&](uint32_t epoch) { profile.before_launch(epoch); };
  hooks.checkpoint_due = [&](uint32_t next_epoch) {
    return c.checkpoint_every > 0 && next_epoch % uint32_t(c.checkpoint_every) == 0;
  };
  hooks.on_checkpoint = [&](const TrainResult& r) {
    saver.save_best(r);
    saver.save(checkpoint_file_name(start_epoch + (r.epochs_run)), r.best_score, r.best_epoch);
  };
  hooks.stop_requested = [] { return stop_signal() != 0; };
  // A write that fails mid-run (a full disk, an I/O error) ends the run with exit code 1; the
  // message says which checkpoint survives, whole, to --resume from.
  auto survivor = [&](const std::exception& e) {
    return std::runtime_error(
        std::string(e.what()) + "; " +
        (saver.last_good().empty() ? "no checkpoint was written" : "last good checkpoint: " + saver.last_good()));
  };
  install_stop_handlers();
  TrainResult res;
  try {
    res = train_loop(c, *ex, start_epoch, resuming ? ck.best_score : -std::numeric_limits<float>::infinity(),
                     resuming ? ck.best_epoch : 0, hooks);
  } catch (const UsageError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw survivor(e);
  }
  profile.finish();
  if (tty) std::fprintf(stderr, "\n");

  std::printf("trained epochs %u..%u (%u) in %s: best score %.3f at epoch %u%s\n", res.first_epoch, res.last_epoch,
              res.epochs_run, duration(res.seconds).c_str(), double(res.best_score), res.best_epoch,
              res.early_stopped ? " (early stop: no better score for --patience epochs)" : "");
  if (res.nonfinite) {
    try {
      saver.save_best(res);  // the best epoch's state is finite: it came before the failure
      saver.writer.drain();
    } catch (const std::runtime_error& e) {
      throw survivor(e);
    }
    remove_stop_handlers();  // only now: a second signal during the write removes its temporary
    std::fprintf(stderr, "grpo train: stopped at epoch %u: the loss or the gradients are not finite; %s\n",
                 res.last_epoch,
                 saver.last_good().empty() ? "no checkpoint was written"
                                           : ("last good checkpoint: " + saver.last_good()).c_str());
    return 1;
  }
  // Every epoch run is consumed here: the checkpoint's best score and epoch are exact.
  std::string path;
  try {
    saver.save_best(res);
    path = saver.save(res.interrupted ? checkpoint_file_name(res.last_epoch + 1) : "final.safetensors", res.best_score,
                      res.best_epoch);
    saver.writer.drain();
  } catch (const std::runtime_error& e) {
    throw survivor(e);
  }
  remove_stop_handlers();
  std::printf("checkpoint %s\n", path.c_str());
  if (res.interrupted) {
    std::fprintf(stderr, "grpo train: stopped by %s after epoch %u; continue with --resume %s\n",
                 stop_signal() == SIGTERM ? "SIGTERM" : "an interrupt", res.last_epoch, path.c_str());
    return stopped_exit_code(stop_signal());
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto st = std::make_shared<TrainCommandState>();
  CLI::App* sub = app.add_subcommand("train", "train a policy (docs/spec/training.md, --algo reference)");
  add_train_flags(*sub, st->flags);
  sub->add_flag("--overwrite", st->overwrite, "reuse an --out directory that already holds a run");
  sub->add_option("--resume", st->resume,
                  "continue the run saved in this checkpoint (its network, game and algorithm; its directory "
                  "unless --out is given), bit for bit as if never stopped");
  return {sub, [sub, st] { return run_train(*sub, *st); }};
}

}  // namespace grpo
