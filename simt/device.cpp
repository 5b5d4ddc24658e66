// The emulated device: one GPU with an H100's limits (memory, shared memory, SMs), its
// attributes and properties, per-function dynamic shared-memory limits, synchronisation and reset.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "simt/runtime_internal.h"

namespace simt::detail {
namespace {

std::map<const void*, int> g_func_smem_limit;  // cudaFuncAttributeMaxDynamicSharedMemorySize
std::map<const void*, int> g_func_carveout;    // cudaFuncAttributePreferredSharedMemoryCarveout

}  // namespace

size_t dynamic_smem_limit(const void* func) {
  auto lim = g_func_smem_limit.find(func);
  return lim == g_func_smem_limit.end() ? 48 << 10 : size_t(lim->second);
}

}  // namespace simt::detail

using namespace simt::detail;

// ---- device ----
cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return set_error(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return set_error(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : set_error(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "SIMT emulator (sm_90)");
  p->totalGlobalMem = kDeviceMemory;
  p->sharedMemPerBlock = 48 << 10;
  p->sharedMemPerBlockOptin = kMaxDynamicSmem;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerBlock = p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 5120;
  p->concurrentKernels = p->unifiedAddressing = p->canMapHostMemory = 1;
  p->asyncEngineCount = 2;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int device) {
  if (!v) return set_error(cudaErrorInvalidValue);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *v = 132;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *v = 1024;
      break;
    case cudaDevAttrMaxBlockDimX:
    case cudaDevAttrMaxBlockDimY:
      *v = 1024;
      break;
    case cudaDevAttrMaxBlockDimZ:
      *v = 64;
      break;
    case cudaDevAttrMaxGridDimX:
      *v = 0x7fffffff;
      break;
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
      *v = 65535;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *v = 48 << 10;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = kMaxDynamicSmem;
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *v = 228 << 10;
      break;
    case cudaDevAttrReservedSharedMemoryPerBlock:
      *v = 1 << 10;
      break;
    case cudaDevAttrMaxRegistersPerBlock:
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *v = 65536;
      break;
    case cudaDevAttrWarpSize:
      *v = 32;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = 0;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *v = 2048;
      break;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *v = 32;
      break;
    case cudaDevAttrL2CacheSize:
      *v = 50 << 20;
      break;
    case cudaDevAttrClockRate:
      *v = 1980000;
      break;
    case cudaDevAttrMemoryClockRate:
      *v = 2619000;
      break;
    case cudaDevAttrGlobalMemoryBusWidth:
      *v = 5120;
      break;
    case cudaDevAttrClusterLaunch:  // sm_90: thread-block clusters (launch_cluster)
      *v = 1;
      break;
    default:
      return set_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

// The emulated H100's 132 SMs sit in GPCs of 18 and 16 SMs; a cluster's blocks share one GPC, so
// clusters of 8 one-per-SM blocks fit 2 to a GPC, 16 in all, not 132 / 8. An SM takes blocks up to
// its 228 KB of shared memory (1 KB reserved per block), 2048 threads and 32 blocks.
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, const void* func, const cudaLaunchConfig_t* config) {
  if (!clusters || !func || !config) return set_error(cudaErrorInvalidValue);
  unsigned size = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      const auto& d = config->attrs[i].val.clusterDim;
      size = d.x * d.y * d.z;
    }
  const dim3 b = config->blockDim;
  const size_t threads = size_t(b.x) * b.y * b.z;
  if (size == 0 || size > 8) return set_error(cudaErrorInvalidClusterSize);
  if (threads == 0 || threads > 1024 || config->dynamicSmemBytes > dynamic_smem_limit(func))
    return set_error(cudaErrorInvalidValue);
  const size_t per_sm = std::min({size_t(228 << 10) / (config->dynamicSmemBytes + 1024), 2048 / threads, size_t(32)});
  int n = 0;
  for (int gpc : {18, 18, 16, 16, 16, 16, 16, 16}) n += int(size_t(gpc) * per_sm / size);
  *clusters = n;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return set_error(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > kMaxDynamicSmem) return set_error(cudaErrorInvalidValue);
    g_func_smem_limit[func] = value;
    return cudaSuccess;
  }
  // A hint the emulator keeps only to report it (cudaFuncGetAttributes): it has no L1. -1: the
  // device's default; else a percentage.
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
    if (value < -1 || value > 100) return set_error(cudaErrorInvalidValue);
    g_func_carveout[func] = value;
    return cudaSuccess;
  }
  return set_error(cudaErrorInvalidValue);
}

// What the emulator knows of a kernel: its dynamic shared-memory limit, the carveout asked for,
// and the device's block limits. Its static __shared__ variables are not attributed to kernels (static_shared.cpp finds
// the executable's, all together), so sharedSizeBytes reads 0; callers take their own count as
// the least (rollout_cluster.cu).
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr) return set_error(cudaErrorInvalidValue);
  if (!func) return set_error(cudaErrorInvalidDeviceFunction);
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  attr->maxDynamicSharedSizeBytes = int(dynamic_smem_limit(func));
  const auto carveout = g_func_carveout.find(func);
  attr->preferredShmemCarveout = carveout == g_func_carveout.end() ? -1 : carveout->second;
  attr->ptxVersion = attr->binaryVersion = 90;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (!free_bytes || !total) return set_error(cudaErrorInvalidValue);
  *total = kDeviceMemory;
  *free_bytes = kDeviceMemory - device_bytes_in_use();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  sync_device();
  return cudaSuccess;
}
cudaError_t cudaDeviceReset() {
  settle_legacy();
  sync_device();
  (void)cudaGetLastError();  // clears the sticky error
  g_func_smem_limit.clear();
  return cudaSuccess;
}
cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }
