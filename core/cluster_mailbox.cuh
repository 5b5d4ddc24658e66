// Mailboxes: blocks of a thread-block cluster store into each other's shared memory, and the
// receiving block waits for the bytes themselves rather than for every block of the cluster. A
// mailbox is an mbarrier in the receiver's dynamic shared memory. A phase completes once the
// receiver's thread 0 has arrived (mailbox_sent: after a block barrier that every thread of the
// block reaches after its own sends of the phase; the arrival also arms the bytes the other
// blocks will send) and those bytes have landed (a send to another block is an st.async, whose
// completion the mbarrier counts; a send to the block itself is a plain store, which the block
// barrier orders before every later read in the block: st.async may only write another block).
// A block barrier, not each warp's own __syncwarp and arrival: compute-sanitizer's racecheck
// follows a block barrier, and not the order a warp barrier and its lane 0's release give the
// other lanes' stores.
//
// Why: a cluster barrier is a release at cluster scope, which sm_90 compiles to MEMBAR.ALL.GPU:
// every thread waits for all of its earlier stores, global ones too, before it may arrive, and
// then for the slowest block. A mailbox's wait needs neither.
//
// The protocol the callers keep (each is what a cluster barrier would have given them):
//   - mailbox_init by thread 0 before a cluster barrier that every block passes before any send;
//   - the block is one-dimensional, and each phase every thread of the receiver calls
//     mailbox_sent once, at one site (it holds a __syncthreads; thread 0 passes the bytes the
//     other blocks send it this phase), and then GRPO_MAILBOX_WAIT with the phase's parity (0,
//     1, 0, ...), at one site a phase; thread 0 arrives for phase k + 1 only after the block
//     barrier that every thread reaches after its wait of phase k, so no thread can fall two
//     phases behind;
//   - bytes of phase k + 1 land only after the receiver's phase k completed (else they count
//     toward phase k, which then never completes) and after the receiver is done with the memory
//     they overwrite: a chain of data the sender waited for must order both;
//   - a block exits only after a cluster barrier that follows the last send to it.
//
// The emulator (GRPO_SIMT) cannot park a thread on an mbarrier: there a send to another block is
// a plain store into it, mailbox_sent is its block barrier and then a split cluster barrier's
// arrive, and each wait that barrier's wait, so the emulator checks the data flow under the
// stronger order of a cluster barrier (races, bounds, bits). What it checks of the mailboxes
// themselves is their bookkeeping, which a GPU turns into a hang: at each release, that every
// phase armed had exactly the bytes armed, once; at a cluster's end, that no bytes went unawaited
// (simt/scheduler_cluster.cpp).
//
// A GPU's wait traps after kMailboxTimeoutNs: the context then holds a sticky error (unspecified
// launch failure) that the next synchronisation reports, rather than a hang; a debugger that
// holds the GPU at a breakpoint that long sets it off too.
//
// Two ways to wait (GRPO_MAILBOX_WAIT_OR_SPIN's spin): mbarrier.try_wait, which may suspend the
// thread until the phase completes or a time limit passes (CUTLASS's pipelines wait so), or
// mbarrier.test_wait in a loop, which never suspends it (and takes issue slots from any warp
// that shares its scheduler). How soon each returns after the phase completes, NVIDIA does not
// publish: bench_rollout_cuda times the cluster kernel both ways.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/cluster.cuh"

namespace grpo {

struct alignas(8) Mailbox {
  uint64_t bar;
};

#if defined(__CUDACC__)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr uint64_t kMailboxTimeoutNs = 10'000'000'000ull;

namespace mailbox_detail {
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// The shared::cluster address of what `local` is in block `rank` of the cluster.
__device__ __forceinline__ uint32_t remote(uint32_t local, unsigned rank) {
  uint32_t r;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}
// Whether the phase of `parity` has completed: mbarrier.try_wait, which may first suspend the
// thread a while, or with spin test_wait, which answers at once.
__device__ __forceinline__ bool phase_done(uint32_t bar, uint32_t parity, bool spin) {
  uint32_t done;
  if (spin)
    asm volatile(
        "{ .reg .pred p; mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  else
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  return done != 0;
}
__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// No printf before the trap: its argument buffer would give every kernel that waits a stack
// frame (local memory, which the build refuses).
__device__ __forceinline__ void wait(Mailbox* box, uint32_t parity, bool spin) {
  const uint32_t bar = smem_addr(box);
  if (phase_done(bar, parity, spin)) return;
  const uint64_t start = globaltimer();
  while (!phase_done(bar, parity, spin))
    if (globaltimer() - start > kMailboxTimeoutNs) __trap();
}
}  // namespace mailbox_detail

// Thread 0 of the block, once, before a cluster barrier that precedes any send to it: n
// mailboxes, each phase of each taking one arrival (thread 0's, in mailbox_sent).
__device__ __forceinline__ void mailbox_init(Mailbox* boxes, unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mailbox_detail::smem_addr(boxes + i)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

namespace mailbox_detail {
// st.async of 4, 8 or 16 bytes to `to` in another block, counted by its mbarrier at `bar`.
__device__ __forceinline__ void st_async(uint32_t to, float v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(to),
               "r"(__float_as_uint(v)), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void st_async(uint32_t to, uint2 v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(to), "r"(v.x),
               "r"(v.y), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void st_async(uint32_t to, float4 v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(to),
               "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
               "r"(__float_as_uint(v.w)), "r"(bar)
               : "memory");
}
}  // namespace mailbox_detail

// v into what `local` (this block's dynamic shared memory) is in block `rank`, counted by that
// block's mailbox at what `box` is here, or, in this block, stored (mailbox_sent's block barrier
// orders it). V: float, uint2 or float4, aligned to its size.
template <class V>
__device__ __forceinline__ void mailbox_send(V* local, unsigned rank, Mailbox* box, V v) {
  using namespace mailbox_detail;
  if (rank == cluster_block_rank()) {
    *local = v;
    return;
  }
  st_async(remote(smem_addr(local), rank), v, remote(smem_addr(box), rank));
}
// v into `local` here and into what `local` is in each other block of a cluster of kBlocks, counted
// by their mailboxes at what `box` is here: mailbox_send to every rank, without a test a rank
// (the other blocks in turn from the next rank, a modulo of a power of two).
template <unsigned kBlocks, class V>
__device__ __forceinline__ void mailbox_broadcast(V* local, Mailbox* box, V v) {
  using namespace mailbox_detail;
  static_assert(kBlocks > 0 && (kBlocks & (kBlocks - 1)) == 0, "a power of two: the rank's modulo is a mask");
  *local = v;
  const unsigned own = cluster_block_rank();
  const uint32_t at = smem_addr(local), bar = smem_addr(box);
#pragma unroll
  for (unsigned i = 1; i < kBlocks; ++i) {
    const unsigned r = (own + i) % kBlocks;
    st_async(remote(at, r), v, remote(bar, r));
  }
}
// Every thread of the block, once a phase, after its sends of the phase and before its wait: the
// block barrier orders every thread's stores into its own block before the block's reads after
// the wait; then thread 0 arrives, arming the bytes the other blocks send this block in the phase
// (one operation: the phase cannot complete without them).
__device__ __forceinline__ void mailbox_sent(Mailbox* box, uint32_t remote_bytes) {
  const uint32_t bar = mailbox_detail::smem_addr(box);
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(remote_bytes)
                 : "memory");
}
#define GRPO_MAILBOX_WAIT(box, parity) ::grpo::mailbox_detail::wait((box), (parity), false)
#define GRPO_MAILBOX_WAIT_OR_SPIN(box, parity, spin) ::grpo::mailbox_detail::wait((box), (parity), (spin))
#else  // an older architecture in the build's list: no clusters; the host never launches one there
__device__ __forceinline__ void mailbox_init(Mailbox*, unsigned) { __trap(); }
template <class V>
__device__ __forceinline__ void mailbox_send(V*, unsigned, Mailbox*, V) {
  __trap();
}
template <unsigned kBlocks, class V>
__device__ __forceinline__ void mailbox_broadcast(V*, Mailbox*, V) {
  __trap();
}
__device__ __forceinline__ void mailbox_sent(Mailbox*, uint32_t) { __trap(); }
#define GRPO_MAILBOX_WAIT(box, parity) __trap()
#define GRPO_MAILBOX_WAIT_OR_SPIN(box, parity, spin) __trap()
#endif
#elif defined(GRPO_SIMT)
inline void mailbox_init(Mailbox* boxes, unsigned n) {
  for (unsigned i = 0; i < n; ++i) ::simt::detail::mailbox_init(boxes + i);
}
template <class V>
void mailbox_send(V* local, unsigned rank, Mailbox* box, V v) {
  if (rank == cluster_block_rank()) {
    *local = v;
    return;
  }
  *cluster_map_shared(local, rank) = v;
  ::simt::detail::mailbox_received(cluster_map_shared(box, rank), sizeof(V));
}
template <unsigned kBlocks, class V>
void mailbox_broadcast(V* local, Mailbox* box, V v) {
  static_assert(kBlocks > 0 && (kBlocks & (kBlocks - 1)) == 0, "a power of two: the rank's modulo is a mask");
  *local = v;
  const unsigned own = cluster_block_rank();
  for (unsigned i = 1; i < kBlocks; ++i) {
    const unsigned r = (own + i) % kBlocks;
    *cluster_map_shared(local, r) = v;
    ::simt::detail::mailbox_received(cluster_map_shared(box, r), sizeof(V));
  }
}
inline void mailbox_sent(Mailbox* box, uint32_t remote_bytes) {
  __syncthreads();  // every thread of the block, at one site (the emulator's barrier checks)
  ::simt::detail::mailbox_arrive(box, remote_bytes);
  GRPO_CLUSTER_ARRIVE();
}
#define GRPO_MAILBOX_WAIT(box, parity) ::simt::detail::mailbox_wait((box), (parity), __FILE__, __LINE__)
// The emulator's wait is one way: a cluster barrier's (spin is read and not used).
#define GRPO_MAILBOX_WAIT_OR_SPIN(box, parity, spin) \
  ((void)(spin), ::simt::detail::mailbox_wait((box), (parity), __FILE__, __LINE__))
#endif

}  // namespace grpo
