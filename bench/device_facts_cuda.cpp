// device_facts_cuda: what the CUDA runtime says about device 0, as one JSON object on stdout
// (tools/gpu_check puts it in its report). On the simt build the "device" is the CPU emulator,
// and the object says so. Exit 1 with one line on stderr when no device answers.
#include <cstdio>
#include <string>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

namespace {

// cudaDeviceProp lost its clock fields in CUDA 13; the attributes remain.
int attribute(cudaDeviceAttr a, int dev) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, a, dev) == cudaSuccess ? v : -1;
}

std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

int main() {
  int dev = 0;
  cudaDeviceProp p{};
  cudaError_t err = cudaGetDevice(&dev);
  if (err == cudaSuccess) err = cudaGetDeviceProperties(&p, dev);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "device_facts_cuda: no CUDA device answers: %s\n", cudaGetErrorString(err));
    return 1;
  }
  nlohmann::json j = {{"name", p.name},
                      {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
                      {"sms", p.multiProcessorCount},
                      {"global_memory_bytes", p.totalGlobalMem},
                      {"l2_bytes", p.l2CacheSize},
                      {"shared_memory_per_block_optin_bytes", p.sharedMemPerBlockOptin},
                      {"registers_per_sm", p.regsPerMultiprocessor},
                      {"memory_bus_bits", p.memoryBusWidth}};
#if defined(GRPO_GPU)
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  j["runtime_version"] = version(rt);
  j["driver_version_cuda"] = version(drv);
  j["sm_clock_khz"] = attribute(cudaDevAttrClockRate, dev);
  j["memory_clock_khz"] = attribute(cudaDevAttrMemoryClockRate, dev);
#else
  (void)attribute;
  (void)version;
  j["emulated"] = true;
#endif
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
