// The arithmetic of the CUDA executor's matrix products (grpo train --precision):
//   fp32  every product in fp32 (the default);
//   tf32  the cuBLASLt products on TF32 tensor cores (fp32 storage, operands rounded inside; the
//         host executor runs fp32 instead);
//   bf16  fc1's three products (the network's only large ones) on bf16 operands summed in fp32:
//         cuBLASLt's tensor-core kernels, or for a rollout step of up to 256 games the few-row
//         kernel (bf16 loads, fp32 FMAs). The operands are fc1's input h1 and the gradient da1,
//         which their producers then write in bf16 instead of fp32, and a bf16 copy of fc1's
//         weight; every other op, and the master weights, stay fp32. The host executor runs
//         the twins of that, op by op (its fused passes are fp32 only).
#pragma once
#include <optional>
#include <string_view>

namespace grpo {

enum class Precision { Fp32, Tf32, Bf16 };

inline const char* precision_name(Precision p) {
  return p == Precision::Tf32 ? "tf32" : p == Precision::Bf16 ? "bf16" : "fp32";
}
inline std::optional<Precision> parse_precision(std::string_view s) {
  if (s == "fp32") return Precision::Fp32;
  if (s == "tf32") return Precision::Tf32;
  if (s == "bf16") return Precision::Bf16;
  return std::nullopt;
}

}  // namespace grpo
