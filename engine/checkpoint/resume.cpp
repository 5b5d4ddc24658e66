#include "engine/checkpoint/resume.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/checkpoint/io.h"
#include "core/errors.h"
#include "core/json_excerpt.h"

namespace grpo {

namespace {

template <class T>
void must_agree(const std::string& ckpt, bool given, const char* flag, const T& from_flag, const T& stored) {
  if (!given || from_flag == stored) return;
  std::ostringstream m;
  m << "--resume " << ckpt << ": the checkpoint was trained with " << flag << " " << stored << ", not " << from_flag
    << " (a resumed run keeps the checkpoint's network, game and algorithm)";
  throw UsageError(m.str());
}

}  // namespace

TrainConfig resume_config(const std::string& ckpt_path, const Checkpoint& ck, const TrainConfig& f,
                          const std::function<bool(const char*)>& given, const std::string& default_out) {
  const TrainConfig& s = ck.config;
  must_agree(ckpt_path, given("--hidden-size"), "--hidden-size", f.hidden_size, s.hidden_size);
  must_agree(ckpt_path, given("--batch-size"), "--batch-size", f.batch_size, s.batch_size);
  must_agree(ckpt_path, given("--max-steps"), "--max-steps", f.max_steps, s.max_steps);
  must_agree(ckpt_path, given("--lr-rate"), "--lr-rate", f.lr, s.lr);
  must_agree(ckpt_path, given("--lr-schedule"), "--lr-schedule", std::string(lr_schedule_name(f.lr_schedule)),
             std::string(lr_schedule_name(s.lr_schedule)));
  must_agree(ckpt_path, given("--dropout"), "--dropout", f.dropout, s.dropout);
  must_agree(ckpt_path, given("--seed"), "--seed", f.seed, s.seed);
  must_agree(ckpt_path, given("--algo"), "--algo", std::string(algo_name(f.algo)), std::string(algo_name(s.algo)));
  must_agree(ckpt_path, given("--gamma"), "--gamma", f.gamma, s.gamma);
  must_agree(ckpt_path, given("--entropy-coef"), "--entropy-coef", f.entropy_coef, s.entropy_coef);
  must_agree(ckpt_path, given("--ppo-epochs"), "--ppo-epochs", f.ppo_epochs, s.ppo_epochs);
  must_agree(ckpt_path, given("--minibatches"), "--minibatches", f.minibatches, s.minibatches);
  must_agree(ckpt_path, given("--clip"), "--clip", f.clip, s.clip);
  must_agree(ckpt_path, given("--kl-beta"), "--kl-beta", f.kl_beta, s.kl_beta);
  must_agree(ckpt_path, given("--screen-width"), "--screen-width", f.game.screen_width, s.game.screen_width);
  must_agree(ckpt_path, given("--screen-height"), "--screen-height", f.game.screen_height, s.game.screen_height);
  must_agree(ckpt_path, given("--sprite-width"), "--sprite-width", f.game.sprite_width, s.game.sprite_width);
  must_agree(ckpt_path, given("--max-fruits"), "--max-fruits", f.game.max_fruits, s.game.max_fruits);
  must_agree(ckpt_path, given("--min-fruits"), "--min-fruits", f.game.min_fruits, s.game.min_fruits);
  must_agree(ckpt_path, given("--min-interval-steps"), "--min-interval-steps", f.game.min_interval_steps,
             s.game.min_interval_steps);
  // The linear schedule decays to 0 over the run's --total-epochs: another total would change it.
  if (s.lr_schedule == LrSchedule::Linear && given("--total-epochs") && f.total_epochs != s.total_epochs)
    throw UsageError("--resume " + ckpt_path + ": its learning rate decays linearly over " +
                     std::to_string(s.total_epochs) + " epochs (--lr-schedule linear), so --total-epochs must stay " +
                     std::to_string(s.total_epochs) + ", not " + std::to_string(f.total_epochs));
  TrainConfig c = s;
  if (given("--total-epochs")) c.total_epochs = f.total_epochs;
  if (given("--patience")) c.patience = f.patience;
  if (given("--save-checkpoint-per-num-epoch")) c.checkpoint_every = f.checkpoint_every;
  if (given("--win-score")) c.game.win_score = f.game.win_score;
  if (given("--fail-score")) c.game.fail_score = f.game.fail_score;
  c.backend = f.backend;
  c.use_graph = f.use_graph;
  c.rollout_loop = f.rollout_loop;
  c.gemm_tuning = f.gemm_tuning;  // a choice of this machine, as the backend is
  c.rollout_streams = f.rollout_streams;
  // The numbers a run computes: a bf16 run resumed without the flag stays bf16, and one whose
  // rollout ran on tensor cores (their sums are not the steps') keeps that way unless a flag
  // chooses one. Tensor cores outside bf16 cannot hold: the steps then.
  if (given("--precision") || given("--tf32")) c.precision = f.precision;
  if (rollout_way_given(given)) {
    c.rollout_cluster = f.rollout_cluster;
    c.rollout_cluster_mma = f.rollout_cluster_mma;
  } else if (c.precision != Precision::Bf16) {
    c.rollout_cluster_mma = false;
  }
  c.out_dir = given("--out") ? f.out_dir : default_out;
  c.metrics_path = given("--metrics") ? f.metrics_path : c.out_dir + "/metrics.jsonl";
  if (ck.state.scalars.lr0 != c.lr || ck.state.scalars.lr_anneal_epochs != c.lr_anneal_epochs())
    throw UsageError("--resume " + ckpt_path + ": the stored learning-rate schedule does not match its config");
  c.validate();
  return c;
}

void trim_metrics(const std::string& path, uint32_t first_epoch) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    try {
      // Our lines are flat objects; a deeper one is not ours.
      const nlohmann::json j = nlohmann::json::parse(line, depth_limit(2));
      const auto e = j.find("epoch");
      if (e != j.end() && e->is_number_unsigned() && e->get<uint64_t>() < first_epoch) kept += line + '\n';
    } catch (const JsonTooDeep&) {
    } catch (const nlohmann::json::exception&) {
      // a torn last line from a killed run, or not ours: drop it
    }
  }
  in.close();
  write_file_atomic(path, kept);
}

}  // namespace grpo
