// The host twins' thread pool (bench/README.md, "thread interplay"). An OpenMP parallel region
// ends in a barrier, so on a shared two-core machine every region waits for a worker that the
// scheduler has not run yet, and a small op costs many times its work. Here the calling thread claims fixed chunks
// itself, a persistent worker claims whatever is left when it gets to run, and the caller waits only for chunks a
// worker actually took: with an absent worker the call costs what one thread costs.
// Chunks are fixed index ranges, so results do not depend on who ran which chunk.
#pragma once
#include <type_traits>

namespace grpo::hostpar {

using ChunkFn = void (*)(void* ctx, int chunk);

// Runs fn(ctx, i) once for every i in [0, n), on the calling thread and up to
// omp_get_max_threads() - 1 persistent workers; returns when all have finished. Serial when
// n < 2, with one thread, or when called from inside a chunk. The first exception a chunk throws
// is rethrown here (after the other chunks have finished).
void run_chunks(int n, ChunkFn fn, void* ctx);

// Below this many FLOPs a host product runs on the calling thread: handing tiles to the worker
// costs more than the work (kernels/matmul_host.cpp, cpu/matmul_avx512.cpp, cpu/gemm_packed.cpp).
constexpr double kParallelFlops = 4e6;

// Whether the calling thread is inside a chunk of run_chunks (so anything it runs in parallel
// runs serially). True in the chunks of a serial run too, so the answer never depends on the
// thread count.
bool in_chunk();

// parallel_for(n, [&](int i) { ... }): the same over a lambda.
template <class F>
inline void parallel_for(int n, F&& f) {
  using Fn = std::remove_reference_t<F>;
  run_chunks(
      n, [](void* c, int i) { (*static_cast<Fn*>(c))(i); }, const_cast<void*>(static_cast<const void*>(&f)));
}

// parallel_for over [0, n) items in chunks of `grain` consecutive items: f(begin, end).
template <class F>
inline void parallel_ranges(int n, int grain, F&& f) {
  if (n <= 0) return;
  const int chunks = (n + grain - 1) / grain;
  parallel_for(chunks, [&](int c) {
    const int b = c * grain, e = b + grain < n ? b + grain : n;
    f(b, e);
  });
}

// Row loops of the elementwise twins: f(r0, r1) over [0, M) in chunks of about 4096 elements;
// on the calling thread alone below `parallel_elements` (a fork costs more than the work).
template <class F>
inline void for_row_ranges(int M, int N, double parallel_elements, F&& f) {
  if (M <= 0) return;
  if (double(M) * N < parallel_elements) {
    f(0, M);
    return;
  }
  const int grain = N >= 4096 ? 1 : 4096 / (N > 0 ? N : 1);
  parallel_ranges(M, grain, f);
}

}  // namespace grpo::hostpar
