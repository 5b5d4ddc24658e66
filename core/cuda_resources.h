// Owners of CUDA runtime objects: device and pinned memory, streams, events, graphs and their
// executable instances, each released exactly once by its owner (std::unique_ptr with a
// deleter). Deleters never throw and ignore errors: a broken context must not turn an unwinding
// exception into std::terminate. The make_* functions throw CudaError (core/cuda_check.h).
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/cuda_check.h"

namespace grpo::cuda {

struct FreeDevice {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
struct FreePinned {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
struct DestroyStream {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct DestroyEvent {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};
struct DestroyGraph {
  void operator()(cudaGraph_t g) const noexcept { cudaGraphDestroy(g); }
};
struct DestroyGraphExec {
  void operator()(cudaGraphExec_t g) const noexcept { cudaGraphExecDestroy(g); }
};

template <class T>
using DeviceArray = std::unique_ptr<T[], FreeDevice>;
template <class T>
using PinnedArray = std::unique_ptr<T[], FreePinned>;
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, DestroyStream>;
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, DestroyEvent>;
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, DestroyGraph>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, DestroyGraphExec>;

// n elements of T in device memory (at least one, so that the pointer is never null), aligned
// as cudaMalloc aligns (256 bytes); not initialised.
template <class T>
DeviceArray<T> device_array(size_t n) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return DeviceArray<T>(static_cast<T*>(p));
}

// n elements of T in page-locked host memory (async copies to and from it never stage); not initialised.
template <class T>
PinnedArray<T> pinned_array(size_t n) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return PinnedArray<T>(static_cast<T*>(p));
}

inline Stream make_stream(unsigned flags) {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, flags));
  return Stream(s);
}

inline Event make_event(unsigned flags) {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return Event(e);
}

}  // namespace grpo::cuda
