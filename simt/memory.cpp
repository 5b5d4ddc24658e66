// The emulator's memory: device and pinned allocations (poisoned, bounds-checked), and the
// copies and memsets between them and pageable memory, with CUDA's direction checks and its
// ordering of a synchronous copy's tail on the legacy stream.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "simt/runtime_internal.h"
#include "simt/sanitizer.h"

namespace simt::detail {

uintptr_t g_arena_lo = 0, g_arena_hi = 0;

namespace {

// Device memory comes from one reserved address range (the arena), so that the checks can tell
// a kernel's global access (anything in the arena) from its own stack or host data, and an
// access in the arena outside every live allocation is out of bounds. Each allocation starts on
// a page and is followed by an inaccessible guard; freed ranges are reused only once the arena
// is exhausted, so a use after free points at no live allocation.
constexpr size_t kArenaBytes = 256ull << 30;
constexpr size_t kPage = 4096, kGuard = 64 << 10;
uintptr_t g_bump = 0;
std::multimap<size_t, uintptr_t> g_free_spans;  // span bytes -> start

size_t span_of(size_t n) { return (std::max<size_t>(n, 1) + kPage - 1) / kPage * kPage + kGuard; }

void* arena_alloc(size_t n) {
  if (!g_arena_lo) {
    void* p = mmap(nullptr, kArenaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    g_arena_lo = g_bump = reinterpret_cast<uintptr_t>(p);
    g_arena_hi = g_arena_lo + kArenaBytes;
  }
  const size_t span = span_of(n);
  uintptr_t at;
  if (g_bump + span <= g_arena_hi) {
    at = g_bump;
    g_bump += span;
  } else {
    auto it = g_free_spans.lower_bound(span);
    if (it == g_free_spans.end()) return nullptr;
    at = it->second;
    if (it->first > span) g_free_spans.emplace(it->first - span, at + span);
    g_free_spans.erase(it);
  }
  void* p = reinterpret_cast<void*>(at);
  if (mprotect(p, span - kGuard, PROT_READ | PROT_WRITE) != 0) return nullptr;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer sees overruns into the page's tail, as with a heap block of the exact size.
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + n, span - kGuard - n);
#endif
  return p;
}

void arena_free(void* p, size_t n) {
  const size_t span = span_of(n);
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(p, span - kGuard);
#endif
  madvise(p, span - kGuard, MADV_DONTNEED);
  mprotect(p, span - kGuard, PROT_NONE);
  g_free_spans.emplace(span, reinterpret_cast<uintptr_t>(p));
  san_device_freed(reinterpret_cast<uintptr_t>(p), span);
}

struct Alloc {
  size_t size;
  MemKind kind;
};
std::map<uintptr_t, Alloc> g_allocs;  // device and pinned host ranges, by start address
size_t g_device_bytes = 0;
cudaError_t alloc(void** p, size_t n, MemKind kind) {
  if (!p) return set_error(cudaErrorInvalidValue);
  if (cudaError_t e = forbid_in_capture()) return e;
  if (kind == MemKind::Device && g_device_bytes + n > kDeviceMemory) return set_error(cudaErrorMemoryAllocation);
  void* mem = nullptr;
  if (kind == MemKind::Device) {
    mem = arena_alloc(n);
    if (!mem) return set_error(cudaErrorMemoryAllocation);
  } else if (posix_memalign(&mem, 256, std::max<size_t>(n, 1)) != 0) {
    return set_error(cudaErrorMemoryAllocation);
  }
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
  sync_device();  // cudaFree synchronises the device
  auto it = g_allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_allocs.end() || it->second.kind != kind) return set_error(cudaErrorInvalidValue);
  const size_t n = it->second.size;
  g_allocs.erase(it);
  if (kind == MemKind::Device) {
    g_device_bytes -= n;
    arena_free(p, n);
  } else {
    std::free(p);
  }
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

size_t device_bytes_in_use() { return g_device_bytes; }

bool device_allocation_of(uintptr_t a, size_t n, uintptr_t* lo, uintptr_t* hi) {
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return false;
  --it;
  if (it->second.kind != MemKind::Device || a + n > it->first + it->second.size) return false;
  *lo = it->first, *hi = it->first + it->second.size;
  return true;
}

std::string nearest_device_allocation(uintptr_t a) {
  const Alloc* best = nullptr;
  uintptr_t start = 0, dist = ~uintptr_t{0};
  for (const auto& [lo, al] : g_allocs) {
    if (al.kind != MemKind::Device) continue;
    const uintptr_t d = a < lo ? lo - a : a >= lo + al.size ? a - (lo + al.size) + 1 : 0;
    if (d < dist) dist = d, best = &al, start = lo;
  }
  if (!best) return "no live device allocation";
  char buf[200];
  if (a < start)
    std::snprintf(buf, sizeof buf, "%llu bytes before the allocation [0x%llx, +%zu)", (unsigned long long)(start - a),
                  (unsigned long long)start, best->size);
  else
    std::snprintf(buf, sizeof buf, "%llu bytes past the end of the allocation [0x%llx, +%zu)",
                  (unsigned long long)(a - start - best->size), (unsigned long long)start, best->size);
  return buf;
}

}  // namespace simt::detail

using namespace simt::detail;

// ---- memory ----
cudaError_t cudaMalloc(void** p, size_t n) { return alloc(p, n, MemKind::Device); }
cudaError_t cudaFree(void* p) { return release(p, MemKind::Device); }
cudaError_t cudaMallocHost(void** p, size_t n) { return alloc(p, n, MemKind::Pinned); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return alloc(p, n, MemKind::Pinned); }
cudaError_t cudaFreeHost(void* p) { return release(p, MemKind::Pinned); }

// A copy or memset node: op runs it; dst, src and n are what the memory checks see of it.
static Node transfer(NodeKind kind, void* dst, const void* src, size_t n, std::function<void()> op) {
  Node node(kind);
  node.op = std::move(op);
  node.dst = dst;
  node.src = src;
  node.bytes = n;
  return node;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  MemKind dk, sk;
  if (cudaError_t e = check_copy(dst, src, n, kind, &dk, &sk)) return set_error(e);
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain_stream(nullptr);  // a legacy-stream copy: after the legacy and blocking streams' work
  if (n == 0) return cudaSuccess;
  if (dk == MemKind::Device && sk == MemKind::Pageable) {
    // CUDA returns once the source is in a staging buffer; the DMA to the device lands later,
    // on the legacy stream, unordered with non-blocking streams.
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    defer_on_legacy(transfer(NodeKind::Memcpy, dst, nullptr, n,
                             [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }));
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
    return submit_and_wait(transfer(NodeKind::Memcpy, dst, src, n, [dst, src, n] { std::memmove(dst, src, n); }),
                           stream);
  }
  if (sk == MemKind::Pageable) {  // from pageable memory CUDA stages the source before returning
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    return submit(transfer(NodeKind::Memcpy, dst, nullptr, n,
                           [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }),
                  stream);
  }
  // Pointers kept: the copy reads the source when it runs.
  return submit(transfer(NodeKind::Memcpy, dst, src, n, [dst, src, n] { std::memmove(dst, src, n); }), stream);
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind) {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain_stream(nullptr);
  std::memcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind) {
  if (cudaError_t e = forbid_in_capture()) return e;
  settle_legacy();
  drain_stream(nullptr);
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
  defer_on_legacy(transfer(NodeKind::Memset, p, nullptr, n, [p, value, n] { std::memset(p, value, n); }));
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  if (cudaError_t e = check_memset(p, n)) return set_error(e);
  return submit(transfer(NodeKind::Memset, p, nullptr, n, [p, value, n] { std::memset(p, value, n); }), stream);
}
