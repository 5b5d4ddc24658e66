// The CUDA runtime subset of the emulator: errors, device queries, memory, copies, streams,
// events and the deferred work queue. Every function has the real header's extern "C"
// signature, so an API nobody implemented is a link error. Capture and graphs: graph.cpp.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "simt/runtime_internal.h"

namespace simt::detail {
namespace {

cudaError_t g_last_error = cudaSuccess;
std::deque<Node> g_queue;
// Legacy-stream work the host has already returned from but nothing has ordered yet: the tail
// of a synchronous cudaMemcpy from pageable memory (the DMA from the staging buffer) and a
// synchronous cudaMemset. Non-blocking streams never wait for it; it joins the FIFO (as late as
// CUDA allows) when work goes to the legacy stream or a blocking stream, or the legacy stream
// or the device is synchronised.
std::vector<Node> g_legacy_pending;
CUstream_st g_legacy_stream, g_per_thread_stream;
std::set<CUstream_st*> g_streams;
std::set<CUevent_st*> g_events;

struct Alloc {
  size_t size;
  MemKind kind;
};
std::map<uintptr_t, Alloc> g_allocs;  // device and pinned host ranges, by start address
size_t g_device_bytes = 0;
constexpr size_t kDeviceMemory = 80ull << 30;
constexpr int kMaxDynamicSmem = 227 << 10;
std::map<const void*, int> g_func_smem_limit;  // cudaFuncAttributeMaxDynamicSharedMemorySize

void run_node(const Node& n) {
  switch (n.kind) {
    case NodeKind::Kernel:
      run_kernel(n.kernel);
      break;
    case NodeKind::EventRecord:
      n.event->done = true;
      n.event->when = std::chrono::steady_clock::now();
      break;
    default:
      n.op();
      break;
  }
}

cudaError_t alloc(void** p, size_t n, MemKind kind) {
  if (!p) return set_error(cudaErrorInvalidValue);
  if (cudaError_t e = forbid_in_capture()) return e;
  if (kind == MemKind::Device && g_device_bytes + n > kDeviceMemory) return set_error(cudaErrorMemoryAllocation);
  void* mem = nullptr;
  // posix_memalign keeps the exact size visible to AddressSanitizer; CUDA aligns to 256 bytes.
  if (posix_memalign(&mem, 256, std::max<size_t>(n, 1)) != 0) return set_error(cudaErrorMemoryAllocation);
  std::memset(mem, 0xFF, n);  // poison: reading memory nobody wrote shows up as NaN
  g_allocs[reinterpret_cast<uintptr_t>(mem)] = Alloc{n, kind};
  if (kind == MemKind::Device) g_device_bytes += n;
  *p = mem;
  return cudaSuccess;
}

cudaError_t release(void* p, MemKind kind) {
  if (!p) return cudaSuccess;
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain();  // cudaFree synchronises the device
  auto it = g_allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_allocs.end() || it->second.kind != kind) return set_error(cudaErrorInvalidValue);
  if (kind == MemKind::Device) g_device_bytes -= it->second.size;
  g_allocs.erase(it);
  std::free(p);
  return cudaSuccess;
}

bool direction_ok(cudaMemcpyKind kind, MemKind dst, MemKind src) {
  const bool dd = dst == MemKind::Device, sd = src == MemKind::Device;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return dd && !sd;
    case cudaMemcpyDeviceToHost:
      return !dd && sd;
    case cudaMemcpyDeviceToDevice:
      return dd && sd;
    case cudaMemcpyHostToHost:
      return !dd && !sd;
    case cudaMemcpyDefault:
      return true;
  }
  return false;
}

// Checks and classifies a copy; returns cudaSuccess or the error CUDA would give.
cudaError_t check_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, MemKind* dk, MemKind* sk) {
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  bool dok, sok;
  *dk = classify(dst, n, &dok);
  *sk = classify(src, n, &sok);
  if (!dok || !sok) return cudaErrorInvalidValue;
  if (!direction_ok(kind, *dk, *sk)) return cudaErrorInvalidMemcpyDirection;
  return cudaSuccess;
}

}  // namespace

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "\nsimt: %s\nsimt: schedule seed SIMT_SEED=%llu (rerun with it to reproduce)\n", what.c_str(),
               static_cast<unsigned long long>(seed()));
  std::fflush(stderr);
  std::abort();
}

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) g_last_error = e;
  return e;
}

MemKind classify(const void* p, size_t n, bool* ok) {
  *ok = true;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return MemKind::Pageable;
  --it;
  if (a >= it->first + std::max<size_t>(it->second.size, 1)) return MemKind::Pageable;
  *ok = a + n <= it->first + it->second.size;
  return it->second.kind;
}

void forget_capture(const CUgraph_st* g) {
  for (CUevent_st* e : g_events)
    if (e->captured_in == g) e->captured_in = nullptr;
}

bool is_legacy(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

CUstream_st* resolve(cudaStream_t s) {
  if (is_legacy(s)) return &g_legacy_stream;
  if (s == cudaStreamPerThread) return &g_per_thread_stream;
  return g_streams.count(s) ? s : nullptr;
}

bool stream_is_capturing(cudaStream_t s) {
  const CUstream_st* st = resolve(s);
  return st && st->capturing;
}

bool any_capture() {
  if (g_per_thread_stream.capturing) return true;
  for (const CUstream_st* s : g_streams)
    if (s->capturing) return true;
  return false;
}

void invalidate_captures() {
  g_per_thread_stream.invalidated |= g_per_thread_stream.capturing;
  for (CUstream_st* s : g_streams) s->invalidated |= s->capturing;
}

cudaError_t forbid_in_capture() {
  bool strict = g_per_thread_stream.capturing && g_per_thread_stream.mode != cudaStreamCaptureModeRelaxed;
  for (const CUstream_st* s : g_streams) strict |= s->capturing && s->mode != cudaStreamCaptureModeRelaxed;
  if (!strict) return cudaSuccess;
  invalidate_captures();
  return set_error(cudaErrorStreamCaptureUnsupported);
}

cudaError_t submit(Node&& n, cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing) {
    if (st->invalidated) return set_error(cudaErrorStreamCaptureInvalidated);
    if (n.kind == NodeKind::EventRecord) fatal("event records cannot become graph nodes");
    st->graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{std::move(n)}));
    return cudaSuccess;
  }
  // The legacy stream synchronises with every other stream, so it cannot join a capture.
  if (is_legacy(s) && any_capture()) {
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureImplicit);
  }
  // Work on the legacy stream or a blocking stream waits for earlier legacy-stream work.
  if (!(st->flags & cudaStreamNonBlocking)) settle_legacy();
  g_queue.push_back(std::move(n));
  return cudaSuccess;
}

void settle_legacy() {
  for (Node& n : g_legacy_pending) g_queue.push_back(std::move(n));
  g_legacy_pending.clear();
}

void drain() {
  while (!g_queue.empty()) {
    Node n = std::move(g_queue.front());
    g_queue.pop_front();
    run_node(n);
  }
}

cudaError_t submit_kernel(KernelLaunch&& k, cudaStream_t stream) {
  const dim3 b = k.block, g = k.grid;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (threads == 0 || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
      g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return set_error(cudaErrorInvalidConfiguration);
  auto lim = g_func_smem_limit.find(k.func);
  const size_t smem_limit = lim == g_func_smem_limit.end() ? 48 << 10 : size_t(lim->second);
  if (k.smem > smem_limit) return set_error(cudaErrorInvalidValue);
  Node n(NodeKind::Kernel);
  n.func = k.func;
  n.kernel = std::move(k);
  return submit(std::move(n), stream);
}

}  // namespace simt::detail

using namespace simt::detail;

// ---- errors ----
cudaError_t cudaGetLastError() {
  const cudaError_t e = g_last_error;
  g_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return g_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define SIMT_ERR_(x) \
  case x:            \
    return #x;
    SIMT_ERR_(cudaSuccess)
    SIMT_ERR_(cudaErrorInvalidValue)
    SIMT_ERR_(cudaErrorMemoryAllocation) SIMT_ERR_(cudaErrorInvalidConfiguration)
        SIMT_ERR_(cudaErrorInvalidMemcpyDirection) SIMT_ERR_(cudaErrorInvalidResourceHandle)
            SIMT_ERR_(cudaErrorNotReady) SIMT_ERR_(cudaErrorInvalidDevice) SIMT_ERR_(cudaErrorIllegalState)
                SIMT_ERR_(cudaErrorStreamCaptureUnsupported) SIMT_ERR_(cudaErrorStreamCaptureInvalidated)
                    SIMT_ERR_(cudaErrorStreamCaptureImplicit) SIMT_ERR_(cudaErrorGraphExecUpdateFailure)
                        SIMT_ERR_(cudaErrorNotSupported) SIMT_ERR_(cudaErrorUnknown)
#undef SIMT_ERR_
                            default : return "cudaErrorUnrecognized(simt)";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorGraphExecUpdateFailure:
      return "the graph update was not performed because it included changes which violated constraints specific to "
             "instantiated graph update";
    default:
      return cudaGetErrorName(e);
  }
}

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
    default:
      return set_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return set_error(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > kMaxDynamicSmem) return set_error(cudaErrorInvalidValue);
    g_func_smem_limit[func] = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  return set_error(cudaErrorInvalidValue);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (!free_bytes || !total) return set_error(cudaErrorInvalidValue);
  *total = kDeviceMemory;
  *free_bytes = kDeviceMemory - g_device_bytes;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain();
  return cudaSuccess;
}
cudaError_t cudaDeviceReset() {
  settle_legacy();
  drain();
  g_last_error = cudaSuccess;
  g_func_smem_limit.clear();
  return cudaSuccess;
}
cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }

// ---- memory ----
cudaError_t cudaMalloc(void** p, size_t n) { return alloc(p, n, MemKind::Device); }
cudaError_t cudaFree(void* p) { return release(p, MemKind::Device); }
cudaError_t cudaMallocHost(void** p, size_t n) { return alloc(p, n, MemKind::Pinned); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return alloc(p, n, MemKind::Pinned); }
cudaError_t cudaFreeHost(void* p) { return release(p, MemKind::Pinned); }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  MemKind dk, sk;
  if (cudaError_t e = check_copy(dst, src, n, kind, &dk, &sk)) return set_error(e);
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain();
  if (n == 0) return cudaSuccess;
  if (dk == MemKind::Device && sk == MemKind::Pageable) {
    // CUDA returns once the source is in a staging buffer; the DMA to the device lands later,
    // on the legacy stream, unordered with non-blocking streams.
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    Node node(NodeKind::Memcpy);
    node.op = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
    g_legacy_pending.push_back(std::move(node));
    return cudaSuccess;
  }
  std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
  MemKind dk = MemKind::Device, sk = MemKind::Device;
  if (cudaError_t e = check_copy(dst, src, n, kind, &dk, &sk)) return set_error(e);
  if (!resolve(stream)) return set_error(cudaErrorInvalidResourceHandle);
  const bool pageable = dk == MemKind::Pageable || sk == MemKind::Pageable;
  if (pageable && stream_is_capturing(stream)) {
    // Recent drivers accept it, but nothing keeps the host buffer alive until replay.
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureUnsupported);
  }
  if (n == 0) return cudaSuccess;
  if (dk == MemKind::Pageable) {  // to pageable memory CUDA returns after the copy completed
    drain();
    std::memmove(dst, src, n);
    return cudaSuccess;
  }
  Node node(NodeKind::Memcpy);
  if (sk == MemKind::Pageable) {  // from pageable memory CUDA stages the source before returning
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    node.op = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  } else {
    node.op = [dst, src, n] { std::memmove(dst, src, n); };  // pointers kept: copies at execution
  }
  return submit(std::move(node), stream);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind) {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain();
  std::memcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind) {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain();
  std::memcpy(dst, static_cast<const char*>(symbol) + offset, n);
  return cudaSuccess;
}

static cudaError_t check_memset(void* p, size_t n) {
  if (n == 0) return cudaSuccess;
  bool ok;
  if (!p || classify(p, n, &ok) != MemKind::Device || !ok) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t n) {
  if (cudaError_t e = check_memset(p, n)) return set_error(e);
  if (cudaError_t e = forbid_in_capture()) return e;
  if (n == 0) return cudaSuccess;
  // Asynchronous with respect to the host for device memory, on the legacy stream.
  Node node(NodeKind::Memset);
  node.op = [p, value, n] { std::memset(p, value, n); };
  g_legacy_pending.push_back(std::move(node));
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  if (cudaError_t e = check_memset(p, n)) return set_error(e);
  Node node(NodeKind::Memset);
  node.op = [p, value, n] { std::memset(p, value, n); };
  return submit(std::move(node), stream);
}

// ---- streams ----
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (!s) return set_error(cudaErrorInvalidValue);
  *s = new CUstream_st;
  (*s)->flags = flags;
  g_streams.insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!g_streams.count(s)) return set_error(cudaErrorInvalidResourceHandle);
  if (s->capturing) return set_error(cudaErrorIllegalState);
  g_streams.erase(s);
  delete s;  // its queued work still runs: the queue holds nodes, not streams
  return cudaSuccess;
}

static cudaError_t sync_stream(cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing || (is_legacy(s) && any_capture())) {
    invalidate_captures();
    return set_error(cudaErrorStreamCaptureUnsupported);
  }
  if (is_legacy(s)) settle_legacy();
  drain();
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return sync_stream(s); }
cudaError_t cudaStreamQuery(cudaStream_t s) { return sync_stream(s); }  // runs the work, then "done"

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  CUstream_st* st = resolve(s);
  if (!st || !g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (e->captured_in && e->captured_in != st->graph)
    fatal(
        "cudaStreamWaitEvent on an event recorded inside a capture: multi-stream (fork/join) capture is "
        "not supported by the emulator; capture on one stream");
  return cudaSuccess;  // the one global FIFO already orders everything submitted before
}

// ---- events ----
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return set_error(cudaErrorInvalidValue);
  *e = new CUevent_st;
  (*e)->flags = flags;
  g_events.insert(*e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  g_events.erase(e);
  // A record still queued would touch it: run the queue first (destroy is lazy on a GPU too).
  drain();
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  CUstream_st* st = resolve(s);
  if (!st || !g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (st->capturing) {  // inside a capture an event only marks a join point
    if (st->invalidated) return set_error(cudaErrorStreamCaptureInvalidated);
    e->captured_in = st->graph;
    return cudaSuccess;
  }
  e->captured_in = nullptr;
  Node n(NodeKind::EventRecord);
  n.event = e;
  if (cudaError_t err = submit(std::move(n), s)) return err;
  e->recorded = true;
  e->done = false;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!g_events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
  if (cudaError_t err = forbid_in_capture()) return err;
  drain();
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }  // run, then "done"

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms || !g_events.count(a) || !g_events.count(b)) return set_error(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->done || !b->done) return set_error(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}
