// SIMT emulator: force-included (g++ -include) into every .cu file of the simt flavour, so the
// project's kernels compile as plain C++ and run on the CPU with real barrier and warp
// semantics (README.md in this directory says how, and what it cannot see).
// Types and runtime signatures come from the toolkit's own headers; this file adds what nvcc
// would provide: the launch entry point, thread coordinates, barriers, warp collectives and
// (in intrinsics.h) atomics and math intrinsics. Anything missing is a compile or link error.
#pragma once
#include <cuda_runtime.h>
// cuRAND's device API (the project's Philox draws) must be parsed before threadIdx and blockDim
// become macros: its MTGP32 part declares parameters with those names.
#include <curand_kernel.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

// The real headers make __shared__ empty under g++ (every thread would get its own copy).
// Blocks run one after another, so one static copy is the running block's shared memory. The ABI
// tag marks the variable's symbol (static_shared.cpp finds them all in the executable), so the
// scheduler poisons every one at each block start and the checks know it as shared memory.
// `extern __shared__` does not compile: use GRPO_DYNAMIC_SHARED (core/launch.h).
#undef __shared__
#define __shared__ __attribute__((abi_tag("simt_shared"))) static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
// Inline PTX cannot run on the CPU: any `asm` in a kernel source stops the build here.
#define asm simt_error_inline_PTX_asm_is_refused_by_the_SIMT_emulator

constexpr int warpSize = 32;

namespace simt {

// Schedule seed (env SIMT_SEED, default 1). set_seed restarts the schedule's random streams (the
// threads' and blocks' order, and which stream's ready eager work runs next).
uint64_t seed();
void set_seed(uint64_t s);

// The memory checks on kernel accesses (README.md; env SIMT_CHECKS=0 turns them off). Returns
// the previous setting; for tests that read poisoned memory on purpose.
bool set_checks(bool on);

// Warp-level tensor-core products (core/mma.cuh) completed so far: tests check with it that a
// kernel took its tensor-core path, since the emulator's sums equal the fmaf kernels' bits.
uint64_t mma_products();

// The calling block's dynamic shared memory arena (poisoned with 0xFF bytes at block start).
void* dynamic_shared();

// A vector access (float4, uint2, ...) of `bytes` at p, from a kernel: a GPU faults unless p is
// a multiple of `bytes`. g++ splits such an access into its scalar fields, which the memory checks
// see as aligned 4-byte ones, so core/vector_access.h asks here. Aborts with a report if not.
void check_vector_access(const void* p, size_t bytes);

namespace detail {

struct KernelLaunch {
  const void* func;
  dim3 grid, block;
  size_t smem;
  std::function<void()> body;  // one thread's work: calls the kernel on its frozen arguments
  unsigned cluster = 1;        // blocks per thread-block cluster, along x (launch_cluster)
  bool overlapped = false;     // launch_overlapped: may start before the kernel before it ends
};
cudaError_t submit_kernel(KernelLaunch&& k, cudaStream_t stream);

enum class WarpOp : int { Sync, Shfl, ShflUp, ShflDown, ShflXor, Ballot, Any, All, Mma };
// Blocks the calling lane until every lane of `mask` reached the same op with the same mask;
// returns the source lane's payload (shuffles) or the ballot of the predicates (votes).
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width, const char* file, int line);
void syncthreads(const char* file, int line);
// One lane's operands and result of a warp's mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// (core/mma.cuh): A's four and B's two registers of bf16 pairs, C's and D's four floats.
struct MmaLane {
  uint32_t a[4], b[2];
  float c[4], d[4];
};
// Blocks until all 32 lanes of the warp called it from the same op, then every lane's d holds its
// part of D = A B + C (mma.cpp: the fragment layout and the order of the sums).
void mma_m16n8k16_bf16(MmaLane& lane, const char* file, int line);
// What the collective computes, from the 32 lanes' operands in lane order (scheduler.cpp calls it).
void mma_m16n8k16_bf16_warp(MmaLane* const lanes[32]);
// The cluster barrier (kernels/cluster.cuh): blocks the calling thread until every thread of
// every block of its cluster reached the same one. Also a barrier of the thread's own block.
void cluster_sync(const char* file, int line);
// The same barrier split in two (GRPO_CLUSTER_ARRIVE / GRPO_CLUSTER_WAIT): arrive marks the
// calling thread as arrived and returns at once; wait blocks it until every live thread of the
// cluster waits at the same one (stricter than sm_90, whose wait returns once all have arrived:
// a thread's work between arrive and wait that needs another thread past its wait deadlocks
// here). What a thread does between its arrive and its wait is ordered before other threads'
// accesses by the next cluster barrier only (or, within its block, by a __syncthreads):
// sanitizer.cpp. An arrive twice, a wait without one, or cluster_sync between them aborts.
void cluster_arrive(const char* file, int line);
void cluster_wait(const char* file, int line);
unsigned cluster_size();  // the running launch's blocks per cluster
// Distributed shared memory (core/cluster.cuh): the address in block `rank` of the calling
// block's cluster of what p is in the calling block's dynamic shared memory. Only the dynamic
// arena is mapped (each block of a cluster has its own; static __shared__ variables are swapped
// in and out between the blocks' phases); anything else aborts, as does a rank past the cluster.
void* map_shared_rank(const void* p, unsigned rank);
// Mailboxes (core/cluster_mailbox.cuh), kept as the cluster barrier orders them: the emulator
// records, per mailbox (its address in its block's dynamic arena), the bytes other blocks sent
// it and the bytes its thread 0 armed for the phase (mailbox_arrive, from mailbox_sent: thread 0
// alone counts, as on a GPU). mailbox_wait is a cluster_wait at file:line; the release checks
// each armed phase (the bytes sent are the bytes armed) and completes it, and the wait checks
// that the phase it names has completed. A wrong count, a phase armed twice or never, a send to
// a mailbox never initialised, or bytes no wait took by the cluster's end abort.
void mailbox_init(const void* box);
void mailbox_received(const void* box, size_t bytes);
void mailbox_arrive(const void* box, uint32_t bytes);
void mailbox_wait(const void* box, unsigned parity, const char* file, int line);
// A kernel launched overlapped (simt::launch_overlapped) waits here for the kernel before it
// (core/grid_dependency.cuh's wait_for_previous_kernel). That kernel has finished already: the
// emulator runs kernels one after another. The checks note that the calling thread has waited:
// before that, its accesses to global memory that the kernel before it wrote (or, for a write,
// read) are reported.
void grid_dependency_wait();

// Warp intrinsics are macros expanding to At{__FILE__, __LINE__}.op(...), so that an abort
// report names the call site while default arguments (width, mask) still work.
struct At {
  const char* file;
  int line;

  template <class T>
  T shuffle(WarpOp op, unsigned mask, T var, int arg, int width) const {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                  "warp shuffles move at most 8 bytes of a trivially copyable type");
    uint64_t bits = 0;
    std::memcpy(&bits, &var, sizeof var);
    bits = warp_collective(op, mask, bits, arg, width, file, line);
    T out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
  }
  template <class T>
  T shfl(unsigned mask, T var, int src, int width = 32) const {
    return shuffle(WarpOp::Shfl, mask, var, src, width);
  }
  template <class T>
  T shfl_up(unsigned mask, T var, unsigned delta, int width = 32) const {
    return shuffle(WarpOp::ShflUp, mask, var, static_cast<int>(delta), width);
  }
  template <class T>
  T shfl_down(unsigned mask, T var, unsigned delta, int width = 32) const {
    return shuffle(WarpOp::ShflDown, mask, var, static_cast<int>(delta), width);
  }
  template <class T>
  T shfl_xor(unsigned mask, T var, int lane_mask, int width = 32) const {
    return shuffle(WarpOp::ShflXor, mask, var, lane_mask, width);
  }
  unsigned ballot(unsigned mask, int pred) const {
    return static_cast<unsigned>(warp_collective(WarpOp::Ballot, mask, pred != 0, 0, 32, file, line));
  }
  int any(unsigned mask, int pred) const {
    return static_cast<int>(warp_collective(WarpOp::Any, mask, pred != 0, 0, 32, file, line));
  }
  int all(unsigned mask, int pred) const {
    return static_cast<int>(warp_collective(WarpOp::All, mask, pred != 0, 0, 32, file, line));
  }
  void syncwarp(unsigned mask = 0xffffffffu) const { warp_collective(WarpOp::Sync, mask, 0, 0, 32, file, line); }
};

}  // namespace detail

namespace detail {
// A launch of `kernel` whose arguments are converted to the kernel's parameter types and copied
// by value now, as <<<>>> does.
template <class... P, class... A>
KernelLaunch frozen_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "simt: wrong number of kernel arguments");
  auto frozen = std::make_shared<const std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  return KernelLaunch{reinterpret_cast<const void*>(kernel), grid, block, smem,
                      [kernel, frozen] { std::apply(kernel, *frozen); }};
}
}  // namespace detail

// Enqueues `kernel` on `stream` (or records it into the stream's capture).
template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A&&... args) {
  return detail::submit_kernel(detail::frozen_launch(kernel, grid, block, smem, std::forward<A>(args)...), stream);
}

// The same as a programmatic dependent launch (cudaLaunchKernelEx with
// cudaLaunchAttributeProgrammaticStreamSerialization, core/launch.h's launch_overlapped): run
// in turn like any launch, but checked as one that may start while the kernel before it still
// runs, where that kernel is the node just before it (grid_dependency_wait).
template <class... P, class... A>
cudaError_t launch_overlapped(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                              A&&... args) {
  detail::KernelLaunch k = detail::frozen_launch(kernel, grid, block, smem, std::forward<A>(args)...);
  k.overlapped = true;
  return detail::submit_kernel(std::move(k), stream);
}

// The same as a cluster launch (cudaLaunchKernelEx with cudaLaunchAttributeClusterDimension
// {cluster, 1, 1}): the blocks of a cluster run together, phase by phase between cluster
// barriers (scheduler.cpp). grid.x must be a multiple of cluster, cluster at most 8.
template <class... P, class... A>
cudaError_t launch_cluster(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                           unsigned cluster, A&&... args) {
  detail::KernelLaunch k = detail::frozen_launch(kernel, grid, block, smem, std::forward<A>(args)...);
  k.cluster = cluster;
  return detail::submit_kernel(std::move(k), stream);
}

// Both: a cluster launch that may start while the kernel before it still runs
// (core/launch.h's launch_cluster_overlapped).
template <class... P, class... A>
cudaError_t launch_cluster_overlapped(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                      unsigned cluster, A&&... args) {
  detail::KernelLaunch k = detail::frozen_launch(kernel, grid, block, smem, std::forward<A>(args)...);
  k.cluster = cluster;
  k.overlapped = true;
  return detail::submit_kernel(std::move(k), stream);
}

namespace detail {

// tools/simt_run rewrites `kernel<<<grid, block, smem, stream>>>(args)` into
// `::simt::detail::chevron(kernel, grid, block, smem, stream)(args)`; errors go to
// cudaGetLastError, as with <<<>>>.
template <class... P>
struct Chevron {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  template <class... A>
  void operator()(A&&... args) const {
    (void)launch(kernel, grid, block, smem, stream, std::forward<A>(args)...);
  }
};
template <class... P>
Chevron<P...> chevron(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = 0) {
  return Chevron<P...>{kernel, grid, block, smem, stream};
}

// tools/simt_run's stand-in for a file-scope `extern __shared__ T name[];`: the running block's
// dynamic arena, read at every use.
template <class T>
struct DynamicShared {
  operator T*() const { return static_cast<T*>(dynamic_shared()); }
  T& operator[](size_t i) const { return static_cast<T*>(dynamic_shared())[i]; }
};

}  // namespace detail

}  // namespace simt

// The running thread's coordinates: plain globals (declared exactly as curand_mtgp32_kernel.h
// declares them for host builds) that the scheduler rewrites at every fiber switch. Each value
// is constant for the lifetime of a fiber, so `const` tells the compiler the truth.
extern const uint3 threadIdx;
extern const uint3 blockIdx;
extern const dim3 blockDim;
extern const dim3 gridDim;

#define __syncthreads() ::simt::detail::syncthreads(__FILE__, __LINE__)
#define SIMT_AT_ \
  ::simt::detail::At { __FILE__, __LINE__ }
#define __syncwarp(...) SIMT_AT_.syncwarp(__VA_ARGS__)
#define __shfl_sync(...) SIMT_AT_.shfl(__VA_ARGS__)
#define __shfl_up_sync(...) SIMT_AT_.shfl_up(__VA_ARGS__)
#define __shfl_down_sync(...) SIMT_AT_.shfl_down(__VA_ARGS__)
#define __shfl_xor_sync(...) SIMT_AT_.shfl_xor(__VA_ARGS__)
#define __ballot_sync(...) SIMT_AT_.ballot(__VA_ARGS__)
#define __any_sync(...) SIMT_AT_.any(__VA_ARGS__)
#define __all_sync(...) SIMT_AT_.all(__VA_ARGS__)

#include "simt/intrinsics.h"
