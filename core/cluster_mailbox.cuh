// Mailboxes: blocks of a thread-block cluster store into each other's shared memory, and the
// receiving block waits for the bytes themselves rather than for every block of the cluster. A
// mailbox is an mbarrier in the receiver's dynamic shared memory that counts, per phase, the
// bytes stored into that block with mailbox_send (st.async, whose completion the mbarrier
// counts). The receiver states how many bytes a phase brings (GRPO_MAILBOX_WAIT's `bytes`,
// armed by its thread 0) and its threads wait until all of them have landed.
//
// Why: a cluster barrier is a release at cluster scope, which sm_90 compiles to MEMBAR.ALL.GPU:
// every thread waits for all of its earlier stores, global ones too, before it may arrive, and
// then for the slowest block. A mailbox's wait needs neither.
//
// The protocol the callers keep (each is what a cluster barrier would have given them):
//   - mailbox_init by thread 0 before a cluster barrier that every block passes before any send;
//   - every thread of the receiver that reads the bytes waits, at one GRPO_MAILBOX_WAIT site a
//     phase, with the phase's parity (0, 1, 0, ...), and thread 0 passes the phase's byte count;
//   - bytes of phase k + 1 are sent only after the receiver's threads are past their wait of
//     phase k, and after they are done with the memory the bytes land in (a chain of data the
//     sender waited for orders both);
//   - a block exits only after a cluster barrier that follows the last send to it.
//
// The emulator (GRPO_SIMT) cannot park a thread on an mbarrier: there every send is a plain
// store into the other block, mailbox_sent is a split cluster barrier's arrive and each wait
// its wait, so the emulator checks the data flow under the stronger order of a cluster barrier
// (races, bounds, bits). What it checks of the mailboxes themselves is their bookkeeping, which
// a GPU turns into a hang: after each wait, that the phase was armed once and that the bytes
// sent to it are the bytes armed (simt/scheduler_cluster.cpp). A GPU's wait traps (an error at
// the next synchronisation, not a hang) after kMailboxTimeoutNs.
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
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}
__device__ __forceinline__ bool try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
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
__device__ __forceinline__ void wait(Mailbox* box, uint32_t parity, uint32_t bytes) {
  const uint32_t bar = smem_addr(box);
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
  if (try_wait(bar, parity)) return;
  const uint64_t start = globaltimer();
  while (!try_wait(bar, parity))
    if (globaltimer() - start > kMailboxTimeoutNs) __trap();
}
}  // namespace mailbox_detail

// Thread 0 of the block, once, before a cluster barrier that precedes any send to it.
__device__ __forceinline__ void mailbox_init(Mailbox* box) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mailbox_detail::smem_addr(box)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// v into what `local` (this block's dynamic shared memory) is in block `rank`, counted by that
// block's mailbox at what `box` is here. 4, 8 or 16 bytes, aligned to their size.
__device__ __forceinline__ void mailbox_send(float* local, unsigned rank, Mailbox* box, float v) {
  using namespace mailbox_detail;
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(remote(smem_addr(local), rank)),
      "r"(__float_as_uint(v)), "r"(remote(smem_addr(box), rank))
      : "memory");
}
__device__ __forceinline__ void mailbox_send(uint2* local, unsigned rank, Mailbox* box, uint2 v) {
  using namespace mailbox_detail;
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];" ::"r"(
                   remote(smem_addr(local), rank)),
               "r"(v.x), "r"(v.y), "r"(remote(smem_addr(box), rank))
               : "memory");
}
__device__ __forceinline__ void mailbox_send(float4* local, unsigned rank, Mailbox* box, float4 v) {
  using namespace mailbox_detail;
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   remote(smem_addr(local), rank)),
               "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
               "r"(__float_as_uint(v.w)), "r"(remote(smem_addr(box), rank))
               : "memory");
}
// The calling thread sends nothing more to any mailbox before its next wait.
__device__ __forceinline__ void mailbox_sent() {}
#define GRPO_MAILBOX_WAIT(box, parity, bytes) ::grpo::mailbox_detail::wait((box), (parity), (bytes))
#else  // an older architecture in the build's list: no clusters; the host never launches one there
__device__ __forceinline__ void mailbox_init(Mailbox*) { __trap(); }
template <class V>
__device__ __forceinline__ void mailbox_send(V*, unsigned, Mailbox*, V) {
  __trap();
}
__device__ __forceinline__ void mailbox_sent() { __trap(); }
#define GRPO_MAILBOX_WAIT(box, parity, bytes) __trap()
#endif
#elif defined(GRPO_SIMT)
inline void mailbox_init(Mailbox* box) { ::simt::detail::mailbox_init(box); }
template <class V>
void mailbox_send(V* local, unsigned rank, Mailbox* box, V v) {
  *cluster_map_shared(local, rank) = v;
  ::simt::detail::mailbox_received(cluster_map_shared(box, rank), sizeof(V));
}
inline void mailbox_sent() { GRPO_CLUSTER_ARRIVE(); }
#define GRPO_MAILBOX_WAIT(box, parity, bytes) ::simt::detail::mailbox_wait((box), (parity), (bytes), __FILE__, __LINE__)
#endif

}  // namespace grpo
