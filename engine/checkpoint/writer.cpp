#include "engine/checkpoint/writer.h"

#include <algorithm>
#include <utility>

#include "engine/checkpoint/checkpoint.h"

namespace grpo {

CheckpointWriter::CheckpointWriter(std::string last_good)
    : last_good_(std::move(last_good)), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CheckpointWriter::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void CheckpointWriter::submit(const std::string& path, const TrainConfig& c, RunState s, float best_score,
                              uint32_t best_epoch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    rethrow_locked();
    Job job{path, c, std::move(s), best_score, best_epoch};
    const auto same = std::find_if(queue_.begin(), queue_.end(), [&](const Job& j) { return j.path == path; });
    if (same != queue_.end())
      *same = std::move(job);
    else
      queue_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void CheckpointWriter::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return (queue_.empty() && !busy_) || error_; });
  rethrow_locked();
}

std::string CheckpointWriter::last_good() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_good_;
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || (!queue_.empty() && !error_); });
    if (queue_.empty() || error_) return;  // stopping, and nothing (more) can be written
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failed;
    try {
      save_checkpoint(job.path, job.config, job.state, job.best_score, job.best_epoch);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failed)
      error_ = failed;
    else
      last_good_ = job.path;
    cv_.notify_all();
  }
}

}  // namespace grpo
