// Kernels for the emulator's self-tests: correct ones, and planted bugs the emulator must catch.
#include "core/launch.h"
#include "tests/simt/self_test_kernels.h"

namespace simt_test {
namespace {

constexpr int kMaxThreads = 256;

__global__ void block_sum_kernel(const float* in, float* out, int n, int active) {
  __shared__ float s[kMaxThreads];
  const int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
  if (tid >= active) return;  // early exit: the barriers below wait only for the live threads
  s[tid] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int stride = 1; stride < active; stride *= 2) {
    const float mine = s[tid];
    const float other = (tid % (2 * stride) == 0 && tid + stride < active) ? s[tid + stride] : 0.f;
    __syncthreads();
    s[tid] = mine + other;
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

// Planted bug: the barrier between loading the tile and reading neighbours is missing, and so
// is the one between reading and writing in the loop.
__global__ void block_sum_racy_kernel(const float* in, float* out, int n) {
  GRPO_DYNAMIC_SHARED(float, s);
  const int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
  s[tid] = i < n ? in[i] : 0.f;
  for (int stride = 1; stride < int(blockDim.x); stride *= 2) {
    if (tid % (2 * stride) == 0 && tid + stride < int(blockDim.x)) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}

__global__ void shfl_kernel(const int* in, int* out, int src, int width) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, in[threadIdx.x], src, width);
}
__global__ void shfl_up_kernel(const int* in, int* out, int delta, int width) {
  out[threadIdx.x] = __shfl_up_sync(0xffffffffu, in[threadIdx.x], delta, width);
}
__global__ void shfl_down_kernel(const float* in, float* out, int delta, int width) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, in[threadIdx.x], delta, width);
}
__global__ void shfl_xor_kernel(const double* in, double* out, int mask, int width) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, in[threadIdx.x], mask, width);
}
__global__ void votes_kernel(const int* pred, unsigned* ballot, int* any, int* all, unsigned mask) {
  const unsigned lane = threadIdx.x % 32;
  if (!((mask >> lane) & 1u)) return;
  const int p = pred[threadIdx.x];
  ballot[threadIdx.x] = __ballot_sync(mask, p);
  any[threadIdx.x] = __any_sync(mask, p);
  __syncwarp(mask);
  all[threadIdx.x] = __all_sync(mask, p);
}

__global__ void missing_lane_kernel(int* out, int missing) {
  if (int(threadIdx.x) == missing) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, int(threadIdx.x), 0);
}
__global__ void own_lane_kernel(int* out) {
  // Lane 3 passes a mask without itself: undefined on Volta+.
  const unsigned mask = threadIdx.x == 3 ? 0xfffffff7u : 0xffffffffu;
  out[threadIdx.x] = __shfl_sync(mask, int(threadIdx.x), 0);
}
__global__ void two_barriers_kernel(int* out) {
  if (threadIdx.x % 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void atomics_kernel(const int* values, int n, int* counts, int bins, int* maxv, unsigned* minv, float* fsum,
                               unsigned long long* usum) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&counts[i % bins], 1);
  atomicMax(maxv, values[i]);
  atomicMin(minv, static_cast<unsigned>(values[i]));
  atomicAdd(fsum, 0.5f);
  atomicAdd(usum, static_cast<unsigned long long>(values[i]));
}

__global__ void axpb_kernel(const float* x, float* out, int n, float a, float b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + b;
}

// Several blocks: the last to arrive takes one off the count and says whether any is left.
__global__ void countdown_kernel(unsigned* count, unsigned* arrived, unsigned* trips, cudaGraphConditionalHandle h) {
  const unsigned c = *count;
  if (threadIdx.x == 0) atomicAdd(&trips[c - 1], 1u);
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(arrived, 1u) == gridDim.x - 1) {
    atomicExch(arrived, 0u);
    atomicExch(count, c - 1);
    cudaGraphSetConditional(h, c - 1 != 0);
  }
}

__global__ void smem_poison_kernel(int* out) {
  GRPO_DYNAMIC_SHARED(unsigned char, arena);
  __shared__ int all_ff;
  if (threadIdx.x == 0) all_ff = 1;
  __syncthreads();
  // Each thread checks its byte, then scribbles over it so the next block must see fresh poison.
  if (arena[threadIdx.x] != 0xFF) atomicAnd(&all_ff, 0);
  __syncthreads();
  arena[threadIdx.x] = 0;
  if (threadIdx.x == 0) out[blockIdx.x] = all_ff;
}

// Planted bug: one thread more than the arena has ints writes its slot.
__global__ void smem_past_end_kernel(int* out) {
  GRPO_DYNAMIC_SHARED(int, arena);
  arena[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = threadIdx.x == 0 ? arena[0] : 0;
}

// Static shared memory: each thread checks its byte, then scribbles over it.
__global__ void static_smem_poison_kernel(int* out) {
  __shared__ unsigned char bytes[64];
  __shared__ int all_ff;
  if (threadIdx.x == 0) all_ff = 1;
  __syncthreads();
  if (bytes[threadIdx.x] != 0xFF) atomicAnd(&all_ff, 0);
  __syncthreads();
  bytes[threadIdx.x] = 0;
  if (threadIdx.x == 0) out[blockIdx.x] = all_ff;
}

__global__ void ragged_loop_kernel(float* out) {
  __shared__ float s[64];
  float acc = 0.f;
  for (unsigned k = 0; k < 1 + threadIdx.x % 3; ++k) {
    s[threadIdx.x] = float(k);
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}

// Two tickets per thread from one counter; a thread that ran from start to end without a switch
// holds consecutive tickets.
__global__ void tickets_kernel(unsigned* counter, unsigned* first, unsigned* second) {
  const unsigned t = threadIdx.x;
  first[t] = atomicAdd(counter, 1u);
  second[t] = atomicAdd(counter, 1u);
}

}  // namespace

cudaError_t tickets(unsigned* counter, unsigned* first, unsigned* second, int threads) {
  return simt::launch(tickets_kernel, 1, threads, 0, 0, counter, first, second);
}

cudaError_t static_smem_poison(int* out, int blocks) {
  return simt::launch(static_smem_poison_kernel, blocks, 64, 0, 0, out);
}
cudaError_t smem_past_end(int* out, int ints) {
  return simt::launch(smem_past_end_kernel, 1, ints + 1, ints * sizeof(int), 0, out);
}
cudaError_t barrier_in_ragged_loop(float* out) { return simt::launch(ragged_loop_kernel, 1, 64, 0, 0, out); }

cudaError_t block_sum(const float* in, float* out, int n, int threads, int active, cudaStream_t s) {
  return simt::launch(block_sum_kernel, dim3(grpo::ceil_div(n, threads)), dim3(threads), 0, s, in, out, n, active);
}
cudaError_t block_sum_racy(const float* in, float* out, int n, int threads, cudaStream_t s) {
  return simt::launch(block_sum_racy_kernel, dim3(grpo::ceil_div(n, threads)), dim3(threads), threads * sizeof(float),
                      s, in, out, n);
}
cudaError_t warp_shfl(const int* in, int* out, int threads, int src, int width) {
  return simt::launch(shfl_kernel, 1, threads, 0, 0, in, out, src, width);
}
cudaError_t warp_shfl_up(const int* in, int* out, int threads, int delta, int width) {
  return simt::launch(shfl_up_kernel, 1, threads, 0, 0, in, out, delta, width);
}
cudaError_t warp_shfl_down(const float* in, float* out, int threads, int delta, int width) {
  return simt::launch(shfl_down_kernel, 1, threads, 0, 0, in, out, delta, width);
}
cudaError_t warp_shfl_xor(const double* in, double* out, int threads, int mask, int width) {
  return simt::launch(shfl_xor_kernel, 1, threads, 0, 0, in, out, mask, width);
}
cudaError_t warp_votes(const int* pred, unsigned* ballot, int* any, int* all, int threads, unsigned mask) {
  return simt::launch(votes_kernel, 1, threads, 0, 0, pred, ballot, any, all, mask);
}
cudaError_t warp_missing_lane(int* out, int missing) {
  return simt::launch(missing_lane_kernel, 1, 32, 0, 0, out, missing);
}
cudaError_t warp_own_lane_not_in_mask(int* out) { return simt::launch(own_lane_kernel, 1, 32, 0, 0, out); }
cudaError_t barrier_two_places(int* out) { return simt::launch(two_barriers_kernel, 1, 8, 0, 0, out); }
cudaError_t atomics(const int* values, int n, int* counts, int bins, int* maxv, unsigned* minv, float* fsum,
                    unsigned long long* usum) {
  return simt::launch(atomics_kernel, dim3(grpo::ceil_div(n, 37)), dim3(37), 0, 0, values, n, counts, bins, maxv, minv,
                      fsum, usum);
}
cudaError_t axpb(const float* x, float* out, int n, float a, float b, cudaStream_t s) {
  return simt::launch(axpb_kernel, dim3(grpo::ceil_div(n, 64)), dim3(64), 0, s, x, out, n, a, b);
}
cudaError_t countdown(unsigned* count, unsigned* arrived, unsigned* trips, cudaGraphConditionalHandle h,
                      cudaStream_t s) {
  return simt::launch(countdown_kernel, dim3(3), dim3(32), 0, s, count, arrived, trips, h);
}
cudaError_t smem_poison(int* out, int blocks, size_t smem_bytes) {
  return simt::launch(smem_poison_kernel, blocks, 40, smem_bytes, 0, out);
}

}  // namespace simt_test
