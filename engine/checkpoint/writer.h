// Checkpoints written on a thread of their own (issue 16 item 4): the training loop hands over a
// copy of the state and goes on launching epochs while the file is serialised, written and
// fsynced, instead of leaving the GPU idle for the length of a write.
//
// Jobs run in the order they were submitted. A job whose path is still waiting is replaced, in
// its place in the queue, by the newer one (only the newest best.safetensors matters). A failed
// write stops the queue: its error is rethrown by the next submit() or by drain(), and
// last_good() names the newest file that was written whole, for the "last good checkpoint"
// message.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "engine/executor.h"
#include "engine/train_config.h"

namespace grpo {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string last_good = "");
  ~CheckpointWriter();  // finishes what was submitted; errors are drain()'s to report
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues save_checkpoint(path, c, s, best_score, best_epoch); c is copied. Throws the error of
  // an earlier write that failed, before queueing anything.
  void submit(const std::string& path, const TrainConfig& c, RunState s, float best_score, uint32_t best_epoch);
  // Returns once every submitted job is written; throws the first write's error, if any.
  void drain();
  std::string last_good() const;

 private:
  struct Job {
    std::string path;
    TrainConfig config;
    RunState state;
    float best_score;
    uint32_t best_epoch;
  };
  void run();
  void rethrow_locked();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool busy_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::string last_good_;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace grpo
