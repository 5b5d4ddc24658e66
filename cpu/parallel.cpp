// The host twins' thread pool (cpu/parallel.h). One job at a time: the caller
// publishes (fn, ctx) and a 64-bit word holding {generation, chunk count, next chunk}; whoever
// CASes the word from idx to idx + 1 owns chunk idx. A worker reads the job only after its CAS
// succeeded, and the job cannot end before that worker reports the chunk done, so a late worker
// either claims a chunk of the job then running or finds none (the generation only tells it
// that a new job is there). Workers spin ~100 us after a job, then sleep on a condition variable.
#include "cpu/parallel.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <omp.h>

namespace grpo::hostpar {

namespace {

constexpr int kIdxBits = 22, kCountBits = 22;
constexpr uint64_t kIdxMask = (uint64_t{1} << kIdxBits) - 1;
constexpr int kMaxChunks = int(kIdxMask);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

thread_local bool tl_in_chunk = false;

struct Pool {
  std::atomic<uint64_t> word{0};
  std::atomic<int> done{0};
  ChunkFn fn = nullptr;
  void* ctx = nullptr;
  uint64_t gen = 0;   // caller side only
  std::mutex caller;  // one job at a time; a second concurrent caller runs serially
  std::mutex m;
  std::condition_variable cv;
  std::atomic<int> sleepers{0};
  std::mutex err_m;
  std::exception_ptr error;
  int workers = 0;

  static uint64_t gen_of(uint64_t w) { return w >> (kIdxBits + kCountBits); }
  static int count_of(uint64_t w) { return int((w >> kIdxBits) & kIdxMask); }
  static int idx_of(uint64_t w) { return int(w & kIdxMask); }

  void run_one(int i) {
    tl_in_chunk = true;
    try {
      fn(ctx, i);
    } catch (...) {
      std::lock_guard<std::mutex> lk(err_m);
      if (!error) error = std::current_exception();
    }
    tl_in_chunk = false;
  }

  // Claims and runs chunks while the published job has some left.
  void drain(bool caller_side) {
    uint64_t w = word.load(std::memory_order_acquire);
    for (;;) {
      if (idx_of(w) >= count_of(w)) return;
      if (!word.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      run_one(idx_of(w));
      if (!caller_side)
        done.fetch_add(1, std::memory_order_release);
      else
        done.fetch_add(1, std::memory_order_relaxed);
      w = word.load(std::memory_order_acquire);
    }
  }

  void worker_loop() {
    uint64_t seen = gen_of(word.load(std::memory_order_acquire));
    for (;;) {
      uint64_t w = word.load(std::memory_order_acquire);
      if (gen_of(w) != seen) {
        seen = gen_of(w);
        drain(false);
        continue;
      }
      bool changed = false;
      for (int k = 0; k < 20000 && !changed; ++k) {  // ~100 us of pause instructions
        cpu_relax();
        changed = gen_of(word.load(std::memory_order_relaxed)) != seen;
      }
      if (changed) continue;
      std::unique_lock<std::mutex> lk(m);
      sleepers.fetch_add(1);
      cv.wait(lk, [&] { return gen_of(word.load()) != seen; });
      sleepers.fetch_sub(1);
    }
  }

  void run(int n, ChunkFn f, void* c) {
    fn = f;
    ctx = c;
    error = nullptr;
    done.store(0, std::memory_order_relaxed);
    ++gen;
    const uint64_t w = (gen << (kIdxBits + kCountBits)) | (uint64_t(n) << kIdxBits);
    word.store(w);  // seq_cst: pairs with the sleepers check below (no lost wake-up)
    if (sleepers.load() > 0) {
      { std::lock_guard<std::mutex> lk(m); }
      cv.notify_all();
    }
    drain(true);
    // Every chunk is claimed; wait only for those a worker is still running.
    for (int k = 0; done.load(std::memory_order_acquire) < n; ++k) {
      if (k < 2000)
        cpu_relax();
      else
        std::this_thread::yield();
    }
    if (error) std::rethrow_exception(error);
  }
};

Pool* make_pool() {
  const int threads = omp_get_max_threads();
  if (threads < 2) return nullptr;
  // Leaked on purpose: detached workers may still touch it while the process exits.
  Pool* p = new Pool;
  p->workers = threads - 1;
  for (int t = 0; t < p->workers; ++t) std::thread([p] { p->worker_loop(); }).detach();
  return p;
}

}  // namespace

namespace {
// Runs the chunks on this thread, as chunks: in_chunk() says true inside them whatever the
// thread count, so code that asks (gemm_tiles) takes the same path with one thread as with two.
void run_here(int n, ChunkFn fn, void* ctx) {
  const bool outer = tl_in_chunk;
  tl_in_chunk = true;
  try {
    for (int i = 0; i < n; ++i) fn(ctx, i);
  } catch (...) {
    tl_in_chunk = outer;
    throw;
  }
  tl_in_chunk = outer;
}
}  // namespace

bool in_chunk() { return tl_in_chunk; }

void run_chunks(int n, ChunkFn fn, void* ctx) {
  if (n <= 0) return;
  static Pool* const pool = make_pool();
  if (n == 1 || pool == nullptr || tl_in_chunk || n > kMaxChunks) return run_here(n, fn, ctx);
  std::unique_lock<std::mutex> lk(pool->caller, std::try_to_lock);
  if (!lk.owns_lock()) return run_here(n, fn, ctx);
  pool->run(n, fn, ctx);
}

}  // namespace grpo::hostpar
