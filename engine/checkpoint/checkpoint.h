// Checkpoints as safetensors (https://github.com/huggingface/safetensors, "Format"): an 8-byte
// little-endian header length N, N bytes of JSON header (padded with spaces to 8 bytes), then the
// raw little-endian tensors. Everything is F32:
//   fc_in.weight [Hd, D], layer_norm.weight [Hd], layer_norm.bias [Hd], fc1.weight [Hd, Hd],
//   fc1.bias [Hd], fc_out.weight [3, Hd], fc_out.bias [3]     (docs/spec/training.md, PyTorch names)
//   optimizer.exp_avg.<name>, optimizer.exp_avg_sq.<name>     (AdamW m and v, same shapes)
// so torch's nn.Module.load_state_dict takes the first seven as they are. __metadata__ (string
// values only, as the format requires) holds "format", "config" (the full TrainConfig as JSON),
// "epoch" (epochs completed = the epoch a resume runs next), "adam_step", "lr", "seed",
// "best_score", "best_epoch", and "train_scalars" (every TrainScalars field as JSON, floats with
// round-trip precision) so that a resume restores the device scalars bit for bit.
// The gradient slab is not stored: every epoch overwrites it before reading it.
#pragma once
#include <cstdint>
#include <string>

#include "engine/executor.h"
#include "engine/train_config.h"

namespace grpo {

struct Checkpoint {
  TrainConfig config;
  RunState state;        // params and moments (gradients zero), scalars
  float best_score = 0;  // -inf when no epoch had been scored yet
  uint32_t best_epoch = 0;
  bool has_optimizer = false;  // false: a parameters-only file (fine for play/eval, not for resume)
};

// The whole file as bytes (exposed for tests that corrupt it).
std::string checkpoint_bytes(const TrainConfig& c, const RunState& s, float best_score, uint32_t best_epoch);
// Writes it atomically (engine/checkpoint/io.h); std::runtime_error on any write failure.
void save_checkpoint(const std::string& path, const TrainConfig& c, const RunState& s, float best_score,
                     uint32_t best_epoch);

// Reads and checks everything: the header length, the JSON, the metadata, every tensor's dtype,
// shape (against the stored config's hidden size and game) and byte range (inside the file, no
// overlaps), and that every value is finite. Any problem throws UsageError
// "checkpoint PATH: <what is wrong>" (one line).
// The file must be a regular file; each part is bounded before it is read (header length at most
// kMaxHeaderBytes, JSON at most kMaxHeaderDepth levels, the data section large enough for the
// stored configuration before its slabs are allocated).
Checkpoint load_checkpoint(const std::string& path);
// Only the header's checks, for the configuration (no tensor is read).
TrainConfig load_checkpoint_config(const std::string& path);

// Limits on a checkpoint file (README "Limits on input").
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // safetensors' own limit: 100 MB
inline constexpr int kMaxHeaderDepth = 4;                         // the format needs 3: header, a tensor, its shape
// A parameter of larger magnitude is refused: trained weights stay near 1 (AdamW moves each by
// at most about lr per update), and below this bound the forward pass stays finite in fp32 at
// every size the flags allow, so a hostile file cannot turn into inf or NaN logits later.
inline constexpr float kMaxParameterMagnitude = 1e4f;

// "ckpt-epoch-000200.safetensors": names that sort by epoch (epochs completed).
std::string checkpoint_file_name(uint32_t epochs_done);

}  // namespace grpo
