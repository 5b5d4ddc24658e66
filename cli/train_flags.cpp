#include "cli/train_flags.h"

#include "cli/flag_checks.h"
#include "cli/game_flags.h"
#include "core/errors.h"

namespace grpo {

void add_train_flags(CLI::App& app, TrainFlags& f) {
  TrainConfig& c = f.cfg;
  // A flag given twice takes its last value, so wrappers (tools/train) can set defaults that the
  // user's own flags override.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--preset", f.preset,
                 "reference: the reference's command line (hidden 2048, batch 32, 2000 epochs, 100 steps, lr 1e-4); "
                 "small: its library defaults, sized for a CPU (hidden 512, batch 8, 200 epochs, 200 steps, lr 5e-4). "
                 "Flags given explicitly override the preset")
      ->check(CLI::IsMember({"reference", "small"}))
      ->capture_default_str();
  app.add_option("--hidden-size", c.hidden_size, "hidden width Hd")
      ->check(CLI::Range(TrainConfig::kMinHidden, TrainConfig::kMaxHidden))
      ->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "replicas R of each start group (games = (W - 3) x R)")
      ->check(CLI::Range(1, TrainConfig::kMaxBatch))
      ->capture_default_str();
  app.add_option("--total-epochs", c.total_epochs, "epochs (training steps)")
      ->check(CLI::Range(1, TrainConfig::kMaxEpochs))
      ->capture_default_str();
  app.add_option("--max-steps", c.max_steps, "game steps T per epoch")
      ->check(CLI::Range(1, TrainConfig::kMaxSteps))
      ->capture_default_str();
  app.add_option("--lr-rate", c.lr, "initial learning rate (StepLR: x0.95 every 1000 epochs)")
      ->check(CLI::Range(1e-12, 1.0))
      ->capture_default_str();
  app.add_option("--lr-schedule", f.lr_schedule,
                 "step: StepLR alone; linear: StepLR times a linear decay to 0 over --total-epochs "
                 "(default: step, linear under --algo grpo)")
      ->check(CLI::IsMember({"step", "linear"}));
  app.add_option("--patience", c.patience, "stop after this many epochs without a better score (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--save-checkpoint-per-num-epoch", c.checkpoint_every,
                 "checkpoint cadence in epochs (-1: only at the end)")
      ->check(CLI::Range(-1, 1 << 24) & !CLI::IsMember({0}))
      ->capture_default_str();
  app.add_option("--dropout", c.dropout, "dropout probability, active in rollout and loss pass (0: off)")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  app.add_option("--algo", f.algo,
                 "reference: the reference's returns, advantages and loss; grpo: group-relative advantages, "
                 "clipped ratio over --ppo-epochs passes, optional KL penalty (docs/spec/training.md)")
      ->check(CLI::IsMember({"reference", "grpo"}))
      ->capture_default_str();
  app.add_option("--ppo-epochs", c.ppo_epochs, "grpo: optimisation passes (AdamW updates) over each rollout")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--minibatches", c.minibatches,
                 "grpo: slices of each pass (T / B whole game steps each), one AdamW update per slice; B divides T")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--clip", c.clip, "grpo: epsilon of the clipped ratio, in (0, 1)")
      ->check(CLI::Range(1e-6, 0.999999))
      ->capture_default_str();
  app.add_option("--kl-beta", c.kl_beta, "grpo: weight of the KL penalty to the rollout policy (0: off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--gamma", c.gamma, "discount of the returns (reference) or of the normalised rewards (grpo)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--entropy-coef", c.entropy_coef, "weight of the entropy bonus in the loss")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  app.add_option("--seed", c.seed, "seed of every random stream (init, games, sampling, dropout)")
      ->capture_default_str();
  app.add_option("--backend", f.backend, "auto (cuda when a GPU answers, else host), cuda or host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}))
      ->capture_default_str();
  app.add_flag("--no-graph", f.no_graph,
               "cuda: launch every kernel eagerly (per-phase NVTX ranges) instead of one graph");
  app.add_option("--gemm-tuning", c.gemm_tuning,
                 "cuda: take cuBLASLt's answers per product from this file (grpo tune-gemm writes it on the "
                 "same device; default: the heuristic's first)");
  app.add_flag("--rollout-loop,!--no-rollout-loop", f.rollout_loop,
               "cuda: capture the rollout's steps as one WHILE node (where the product takes the few-row "
               "kernel), eight steps a trip, instead of two nodes a step: 36 nodes for 416 at the small preset");
  app.add_option("--rollout-streams", c.rollout_streams,
                 "cuda: play the rollout's games in this many ranges, each on a stream of its own, so one "
                 "range's product runs beside another's step (not with the cluster kernel or the WHILE loop)")
      ->check(CLI::Range(1, TrainConfig::kMaxRolloutStreams))
      ->capture_default_str();
  auto* cluster = app.add_flag("--cluster-rollout", c.rollout_cluster,
                               "cuda: run the whole rollout as one kernel of thread-block clusters (sm_90) where "
                               "the small product fits; the same run bit for bit");
  auto* mma = app.add_flag("--cluster-rollout-mma", c.rollout_cluster_mma,
                           "cuda: --cluster-rollout with fc1's product on bf16 tensor cores (mma.sync; needs "
                           "--precision bf16); the sums round differently from the steps' in the last places. "
                           "The default under --precision bf16");
  app.add_flag("--no-cluster-rollout", f.no_cluster_rollout,
               "cuda: the rollout's steps, not the cluster kernel, also under --precision bf16")
      ->excludes(cluster)
      ->excludes(mma);
  auto* precision =
      app.add_option_function<std::string>(
             "--precision", [&c](const std::string& v) { c.precision = *parse_precision(v); },
             "matrix products: fp32, tf32 (cuda: TF32 tensor cores, relative error ~1e-3; fp32 on the host) or "
             "bf16 (fc1's products on bf16 operands, fp32 sums; the host runs its twins op by op, slowly)")
          ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
          ->default_str("fp32");
  app.add_flag_callback(
         "--tf32", [&c] { c.precision = Precision::Tf32; }, "cuda: the same as --precision tf32")
      ->excludes(precision);
  app.add_option("--out", c.out_dir, "directory for checkpoints and metrics")->capture_default_str();
  app.add_option("--metrics", c.metrics_path, "metrics file, JSON lines, one per epoch (default: OUT/metrics.jsonl)");
  app.add_option_function<std::string>(
      "--profile-epochs",
      [&c](const std::string& v) {
        const size_t colon = v.find(':');
        const auto a = plain_decimal_count(v.substr(0, colon));
        const auto b = colon == std::string::npos ? std::nullopt : plain_decimal_count(v.substr(colon + 1));
        if (!a || !b || *b < *a || *b >= uint64_t(1) << 24)
          throw CLI::ValidationError("--profile-epochs", "expected A:B with 0 <= A <= B < 16777216, got \"" +
                                                             one_line(v.substr(0, 40)) + "\"");
        c.profile_first = int(*a);
        c.profile_last = int(*b);
      },
      "cuda: cudaProfilerStart/Stop around epochs A..B (0-based, inclusive; for nsys, tools/profile_nsys)");
  add_game_flags(app, c.game);
}

TrainConfig resolve_train_flags(CLI::App& app, const TrainFlags& f) {
  TrainConfig c = f.cfg;
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (f.preset == "small") {
    // Start from the preset, then put back every flag the user gave.
    TrainConfig p = c;
    p.apply_small_preset();
    if (!given("--hidden-size")) c.hidden_size = p.hidden_size;
    if (!given("--batch-size")) c.batch_size = p.batch_size;
    if (!given("--total-epochs")) c.total_epochs = p.total_epochs;
    if (!given("--max-steps")) c.max_steps = p.max_steps;
    if (!given("--lr-rate")) c.lr = p.lr;
    if (!given("--patience")) c.patience = p.patience;
    if (!given("--save-checkpoint-per-num-epoch")) c.checkpoint_every = p.checkpoint_every;
  }
  c.algo = f.algo == "grpo" ? Algo::Grpo : Algo::Reference;
  if (c.algo == Algo::Grpo) {
    // The same for --algo grpo's own defaults (after the preset: they depend on --max-steps).
    TrainConfig g = c;
    g.apply_grpo_defaults();
    if (!given("--dropout")) c.dropout = g.dropout;
    if (!given("--gamma")) c.gamma = g.gamma;
    if (!given("--lr-schedule")) c.lr_schedule = g.lr_schedule;
    if (!given("--ppo-epochs")) c.ppo_epochs = g.ppo_epochs;
    if (!given("--minibatches")) c.minibatches = g.minibatches;
  } else {
    for (const char* flag : {"--ppo-epochs", "--minibatches", "--clip", "--kl-beta"})
      if (given(flag)) throw UsageError(std::string(flag) + " applies to --algo grpo only");
  }
  if (given("--lr-schedule")) c.lr_schedule = f.lr_schedule == "linear" ? LrSchedule::Linear : LrSchedule::Step;
  c.use_graph = !f.no_graph;
  c.rollout_loop = f.rollout_loop;
  c.backend = f.backend == "cuda" ? Backend::Cuda : f.backend == "host" ? Backend::Host : Backend::Auto;
  if (c.metrics_path.empty()) c.metrics_path = c.out_dir + "/metrics.jsonl";
  // With --resume the precision is the checkpoint's unless given: resume_config validates
  // --cluster-rollout-mma against that one, not against this default, and keeps the checkpoint's
  // rollout way unless a flag chose one.
  const bool mma = c.rollout_cluster_mma;
  const CLI::Option* resume = app.get_option_no_throw("--resume");  // train has it, info has not
  const bool resuming = resume != nullptr && resume->count() > 0;
  if (resuming) c.rollout_cluster_mma = false;
  c.validate();
  c.rollout_cluster_mma = mma;
  if (!resuming && !rollout_way_given(app)) c.apply_rollout_default();
  return c;
}

bool rollout_way_given(const CLI::App& app) {
  return rollout_way_given([&app](const char* flag) { return app.count(flag) > 0; });
}

}  // namespace grpo
