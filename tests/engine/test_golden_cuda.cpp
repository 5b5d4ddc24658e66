#include <memory>
#include <vector>

#include "engine/cuda/ops.h"
#include "tests/engine/golden.h"

namespace grpo::test {
namespace {

TEST(GoldenCuda, CudaOpsMatchPyTorch) {
  GRPO_REQUIRE_DEVICE();
  std::vector<void*> owned;
  Memory mem;
  mem.alloc = [&](size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    owned.push_back(p);
    return p;
  };
  mem.upload = [](void* d, const void* s, size_t n) { CUDA_CHECK(cudaMemcpy(d, s, n, cudaMemcpyHostToDevice)); };
  mem.download = [](void* d, const void* s, size_t n) {
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost));
  };
  {
    Blas blas;
    CudaOps ops(GameConfig{}, 1, blas, nullptr);
    run_golden(ops, mem);
  }
  for (void* p : owned) cudaFree(p);
}

}  // namespace
}  // namespace grpo::test
