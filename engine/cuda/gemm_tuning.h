// A tuning file of cuBLASLt's per-product choices, in the spirit of PyTorch's TunableOp but
// reproducible: `grpo tune-gemm` times, on the GPU at hand, every product a configuration's epoch
// sends to cuBLASLt at each of the heuristic's first answers and writes which answer to take
// (the fastest, where it beats the heuristic's first by a margin), the first answer with K split
// several ways among them; `grpo train --gemm-tuning FILE` takes those answers
// (BlasOptions::answers). A choice timed at every start would let two fresh
// runs differ in their bits; a file makes the choice once and names it, so a run with the same
// file on the same device and cuBLASLt version has the same bits. A file names the device and
// the cuBLASLt version it was timed on, and a run elsewhere refuses it: another device's ranks
// are other algorithms.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/train_config.h"
#include "kernels/matmul.h"

namespace grpo {

// The running device's name and cuBLASLt's version, as a tuning file names them.
struct GemmDevice {
  std::string name;
  long long cublaslt_version = 0;
};
GemmDevice this_gemm_device();

// The file's text: the device, the run's precision (TF32 products ask cuBLASLt's heuristic
// another question: another list of answers), and every product of `times` with its times and
// the answer it takes: the fastest of its ranks and of rank 0's splits of K where it is at least
// `min_gain` (a fraction) faster than rank 0, else rank 0 unsplit.
std::string gemm_tuning_json(const GemmDevice& device, Precision precision, const std::vector<Blas::RankTimes>& times,
                             double min_gain);

// The answers of the tuning file at `path` for a run on `device` at `precision` (a file of format
// 1, before splits, has none). Throws UsageError, one line naming the path, where the file cannot
// be read, is not a tuning file, or names another device, cuBLASLt version or precision.
std::map<GemmShape, GemmAnswer> read_gemm_tuning(const std::string& path, const GemmDevice& device,
                                                 Precision precision);

// `grpo tune-gemm`: a CUDA executor for c runs one epoch eagerly from the run's first state,
// then times every product it sent to cuBLASLt at `ranks` answers and rank 0's with K in each of
// `splits` splits (Blas::time_ranks), and returns the file's text. started() runs once the
// executor exists (the configuration fits the device), before the work.
std::string tune_gemm(
    const TrainConfig& c, int ranks, const std::vector<int>& splits, int repeats, double min_gain,
    const std::function<void()>& started = [] {});

}  // namespace grpo
