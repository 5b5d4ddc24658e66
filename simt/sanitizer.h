// The emulator's checks on kernel memory accesses (sanitizer.cpp), fed by the __tsan_* hooks
// that GCC's -fsanitize=thread instrumentation calls in every .cu translation unit, and by the
// scheduler (launch, block, barrier and warp-collective events). Internal to simt/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "simt/runtime_internal.h"

namespace simt::detail {

// A static __shared__ variable of the executable (static_shared.cpp).
struct SharedRange {
  uintptr_t lo, hi;
  std::string name;  // mangled
};
const std::vector<SharedRange>& static_shared_ranges();  // sorted by address
void poison_static_shared();                             // 0xFF into every one

// Bytes of poisoned memory the scheduler keeps on each side of a block's dynamic shared arena:
// an access there is reported as out of bounds (and a stray write lands in them, not in the heap).
constexpr size_t kSharedRedzone = 256;

// Scheduler events. Threads are named by their linear index in the block.
void san_launch_begin(const KernelLaunch& k);
void san_launch_end();  // no kernel runs until the next san_launch_begin
void san_block_begin(size_t block_linear, unsigned char* dyn_smem, size_t dyn_bytes);
void san_barrier_released();  // every live thread of the block passed one barrier
// Cluster launches: the running block's state is parked in slot i (its index in the cluster)
// while another block of the cluster runs, and resumed from it; a released cluster barrier
// orders everything the cluster's blocks did before it before everything they do after it.
void san_block_park(size_t slot);
void san_block_resume(size_t slot);
void san_cluster_released();
// Block `slot` of the running cluster has no live thread left (distributed shared memory: an
// access to its arena since the last cluster barrier is then a report).
void san_block_exited(size_t slot);
void san_collective(unsigned warp, unsigned mask);  // lanes of mask completed a warp collective
// The checks see accesses only between san_enter (a kernel thread is about to run) and
// san_leave (it stopped); emulator code running on a fiber calls san_leave first.
void san_enter(unsigned linear, bool arrived = false);  // arrived: between a split barrier's arrive and wait
void san_leave();

// Scheduler services the checks use (scheduler.cpp).
bool cluster_block_exited(size_t rank);  // block `rank` of the running cluster has no live thread
uint64_t schedule_random();
void yield_mid_way();  // the running thread stays runnable; others may run first
std::string thread_name(size_t block_linear, unsigned linear);  // "block (x,y,z) thread (x,y,z) [warp w lane l]"

// Device allocations (memory.cpp): the live one containing [a, a+n) (false when none does),
// and a description of the allocation nearest to a, for reports.
bool device_allocation_of(uintptr_t a, size_t n, uintptr_t* lo, uintptr_t* hi);
std::string nearest_device_allocation(uintptr_t a);
// The address range device allocations come from (memory.cpp): anything in it is global memory.
extern uintptr_t g_arena_lo, g_arena_hi;
void san_device_freed(uintptr_t lo, size_t n);  // forget the checks' records of a freed range
// The host has synchronised with every node: each launch so far is ordered before all later
// work, so the record of which node each launch was can go (it grows by one a launch).
void san_all_launches_ordered();
// A copy or memset node about to write [dst, dst + n) and read [src, src + n) (src may be null):
// their device words join the checks of races between streams, like a launch's accesses.
void san_copy(void* dst, const void* src, size_t n);
// The same for a node that is not a kernel (`what`: "a cuBLAS product", say): the byte ranges it
// reads, then those it writes (null or empty ranges are skipped).
struct SanRange {
  const void* p;
  size_t n;
};
void san_host_op(std::initializer_list<SanRange> reads, std::initializer_list<SanRange> writes, const char* what);

// file:line (function) for a code address, through addr2line; the raw address when unknown
// (describe_code.cpp).
std::string describe_code(const void* pc);

}  // namespace simt::detail
