// Host twins of the bf16-operand products (kernels/matmul.h): every bf16 value widens to fp32
// exactly and each product of two of them is exact in fp32, so the fp32 twins on the widened
// operands compute what the tensor cores do, in another summation order.
#include <vector>

#include "kernels/matmul.h"

namespace grpo {

namespace {

std::vector<float> widen(const Bf16* x, size_t n) {
  std::vector<float> y(n);
  to_float_host(x, y.data(), n);
  return y;
}

}  // namespace

void linear_forward_bf16_host(const Bf16* X, const Bf16* W, const float* bias, float* Y, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_forward_bf16_host");
  linear_forward_host(widen(X, size_t(M) * K).data(), widen(W, size_t(N) * K).data(), bias, Y, M, N, K);
}

void linear_backward_input_bf16_host(const Bf16* dY, const Bf16* W, float* dX, int M, int N, int K) {
  check_linear_shape(M, N, K, "linear_backward_input_bf16_host");
  linear_backward_input_host(widen(dY, size_t(M) * N).data(), widen(W, size_t(N) * K).data(), dX, M, N, K);
}

void linear_backward_weight_bf16_host(const Bf16* dY, const Bf16* X, float* dW, int M, int N, int K, bool accumulate) {
  check_linear_shape(M, N, K, "linear_backward_weight_bf16_host");
  linear_backward_weight_host(widen(dY, size_t(M) * N).data(), widen(X, size_t(M) * K).data(), dW, M, N, K, accumulate);
}

}  // namespace grpo
