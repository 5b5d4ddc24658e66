// The whole rollout in one launch (rollout_cluster.h): thread-block clusters of kClusterBlocks
// blocks, each cluster a share of the games, each block of it a share of fc1's output columns,
// whose rows of fc1.weight it keeps in shared memory for all T steps. A step is the product of
// the cluster's h1 rows with the block's columns (a1), the wait for the block's games' a1 rows
// (the step's random draws run before it), the fused step of rollout_step_block for the block's
// games (the next step's h1), and the wait for every game's h1 row: no launch, no graph node and
// no read of W1 from L2 between steps. The blocks exchange a1 and h1 through mailboxes
// (core/cluster_mailbox.cuh: distributed shared memory whose bytes the receiver's mbarrier
// counts): the product sends each a1 element to the block that runs its game, and the step sends
// each h1 row to every block's staged rows, so no step waits for L2 but the first (step 0's h1),
// and no thread waits for its own stores. Both also go to global memory, for the loss pass,
// copied by the game's block from its shared memory by warps 1.. while warp 0 takes the game's
// outcome (ClusterHooks): a1 in its step, h1 in the step it feeds.
//
// Each a1 element is summed as kernels/matmul_few_rows.cu sums (kernels/few_rows.h: an fmaf chain
// a tile of k, the tiles' sums in order), plus 0 (the bias the few-row kernel adds, absent here;
// rollout_cluster_product.cuh), and the row-local part is the same function as rollout_step.cu's,
// so a run is the stepwise one bit for bit. With the product on tensor cores (bf16, ClusterProduct::TensorCores) the
// emulator's run still is; a GPU's a1 differs in the last places.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/cluster.cuh"
#include "core/cluster_mailbox.cuh"
#include "core/grid_dependency.cuh"
#include "core/launch.h"
#include "core/phase_clock.cuh"
#include "engine/cuda/rollout_cluster.h"
#include "engine/cuda/rollout_cluster_copy.cuh"
#include "engine/cuda/rollout_cluster_exchange.cuh"
#include "engine/cuda/rollout_cluster_hooks.cuh"
#include "engine/cuda/rollout_cluster_product.cuh"
#include "engine/cuda/rollout_step.h"
#include "engine/cuda/rollout_step_block.cuh"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace grpo {

namespace {

using namespace rollout_step_detail;
using namespace rollout_cluster_detail;

using namespace rollout_cluster_copy;
using namespace rollout_cluster_exchange;
using namespace rollout_cluster_hooks;

// The parameters rollout_step_block reads every step, kept in shared memory for all T steps
// ahead of the block's rows of W1: offsets in floats, each a multiple of 4 (16 bytes, as the
// float4 paths need). From L2 they cost the step two round trips or more (fc_in's rows after
// the game step, and after every mailbox wait, whose acquire invalidates L1, again).
static_assert(kClusterWarps == kStepWarps, "rollout_cluster.h's warps are the fused step's");

struct OnChipParams {
  unsigned fc_in_w_t, fc1_b, fc_out_w, ln_gamma, ln_beta, fc_out_b, floats;
  GRPO_HD OnChipParams(unsigned H, unsigned D) {
    const auto r4 = [](unsigned n) { return (n + 3) / 4 * 4; };
    fc_in_w_t = 0;  // W_in transposed, D rows of fc_in_t_pitch(H) = r4(H): conflict-free float4 reads
    fc1_b = fc_in_w_t + D * r4(H);
    fc_out_w = fc1_b + r4(H);
    ln_gamma = fc_out_w + r4(kActions * H);
    ln_beta = ln_gamma + r4(H);
    fc_out_b = ln_beta + r4(H);
    floats = fc_out_b + r4(kActions);
  }
};

// The kernel's dynamic shared memory, in bytes from its start: the on-chip parameters, the
// block's rows of W1 (ws), the cluster's h1 rows (xs, the most rows a cluster has), the a1 rows of
// the block's games (16-byte aligned, H rounded up to 4 floats each), their game states, then the
// two mailboxes (a1's, then xs's).
struct SmemLayout {
  size_t ws, xs, a1, games, mail, bytes;
  unsigned a1_pitch;
  GRPO_HD SmemLayout(unsigned H, unsigned D, unsigned width, unsigned max_rows, unsigned stride, size_t elem) {
    const size_t block_games = (max_rows + kClusterBlocks - 1) / kClusterBlocks;
    ws = size_t(OnChipParams(H, D).floats) * sizeof(float);
    xs = ws + size_t(width) * stride * elem;
    a1 = (xs + size_t(max_rows) * stride * elem + 15) / 16 * 16;
    a1_pitch = (H + 3) / 4 * 4;
    games = a1 + block_games * a1_pitch * sizeof(float);
    mail = (games + block_games * sizeof(GameState) + 15) / 16 * 16;
    bytes = mail + 2 * sizeof(Mailbox);
  }
};

// X: h1 (or its bf16 copy) at step 0's rows; W: fc1.weight [H, H] (or its bf16 copy). Not
// __restrict__: the kernel itself writes the h1 rows of the later steps. kVec: rollout_step_vec.
// In bf16 the 3 lets ptxas give a thread up to 168 registers (at 128 it spilled) and keeps the
// compilation at three blocks an SM where bf16's shared memory allows it (narrower than the small
// preset: at its width a block's ~110 KB leaves two, which its 17 clusters of one game a block on
// 132 SMs need); fp32's shared memory holds one or two blocks an SM at the presets' widths, so it
// takes 2 and up to 255 registers (at 168 it sat at the limit, where any addition spilled). The
// plan asks the device how many clusters fit with the registers as compiled.
// kHeld (tensor cores only): tiles of W1 each warp keeps in registers (HeldW1), a compilation of
// its own at 2 blocks an SM (242 registers a thread against 156), launched where H >= 512 (the
// small preset: two blocks an SM by shared memory already), so that narrower shapes keep three.
template <class T, bool kMma, bool kVec, unsigned kHeld = 0>
__global__ void __launch_bounds__(kStepThreads, sizeof(T) == sizeof(float) || kHeld > 0 ? 2 : 3)
    rollout_cluster_kernel(GameConfig cfg, Ops::RolloutStep s, const T* X, const T* W, uint32_t steps,
                           unsigned clusters, PhaseClocks clocks, bool spin) {
  __shared__ StepScratch<1> sh;
  GRPO_DYNAMIC_SHARED(unsigned char, smem);
  const unsigned rank = cluster_block_rank(), cluster = blockIdx.x / C;
  const unsigned N = unsigned(s.N), H = unsigned(s.H), stride = smem_stride(H, kMma);
  const unsigned g0 = unsigned(size_t(cluster) * N / clusters), g1 = unsigned(size_t(cluster + 1) * N / clusters);
  // Columns split evenly (width or width - 1 a block, at least 4 from H 32): every block sends a1
  // to every game's block, which the mailboxes' order needs (below).
  const unsigned rows = g1 - g0, width = (H + C - 1) / C;
  const unsigned c0 = rank * H / C, cols = (rank + 1) * H / C - c0;
  const OnChipParams op(H, unsigned(s.D));
  const SmemLayout at(H, unsigned(s.D), width, (N + clusters - 1) / clusters, stride, sizeof(T));
  float* on_chip = reinterpret_cast<float*>(smem);
  T* ws = reinterpret_cast<T*>(smem + at.ws);           // [cols][stride]: the block's rows of W1
  T* xs = reinterpret_cast<T*>(smem + at.xs);           // [rows][stride]: this step's h1 rows of the cluster's games
  float* a1s = reinterpret_cast<float*>(smem + at.a1);  // [games][a1_pitch]: the a1 rows of the block's games
  GameState* states = reinterpret_cast<GameState*>(smem + at.games);   // [games]: their states
  Mailbox* const a1_box = reinterpret_cast<Mailbox*>(smem + at.mail);  // a1's mailbox, then xs's
  Mailbox* const xs_box = a1_box + 1;
  if (threadIdx.x == 0) mailbox_init(a1_box, 2);
  // Launched overlapped: the weights were written kernels before the one before this (the epoch's
  // casts, or an update), so they are staged while that kernel still runs; what it writes (step
  // 0's h1 rows) and what the kernels just before it wrote (the games' states) come after the
  // wait.
  stage_rows(ws, stride, W + size_t(c0) * H, cols, H);
  ParamViews p = s.p;
  p.fc_in_w_t = on_chip + op.fc_in_w_t, p.fc1_b = on_chip + op.fc1_b, p.fc_out_w = on_chip + op.fc_out_w;
  p.ln_gamma = on_chip + op.ln_gamma, p.ln_beta = on_chip + op.ln_beta, p.fc_out_b = on_chip + op.fc_out_b;
  stage_rows(p.fc_in_w_t, fc_in_t_pitch(int(H)), s.p.fc_in_w_t, unsigned(s.D), fc_in_t_pitch(int(H)));
  stage_rows(p.fc1_b, H, s.p.fc1_b, 1, H);
  stage_rows(p.fc_out_w, H, s.p.fc_out_w, kActions, H);
  stage_rows(p.ln_gamma, H, s.p.ln_gamma, 1, H);
  stage_rows(p.ln_beta, H, s.p.ln_beta, 1, H);
  if (threadIdx.x < unsigned(kActions)) p.fc_out_b[threadIdx.x] = s.p.fc_out_b[threadIdx.x];
  wait_for_previous_kernel();
  stage_rows(xs, stride, X + size_t(g0) * H, rows, H);  // step 0's; the later steps' come from the blocks
  if (threadIdx.x == 0)
    for (unsigned g = g0 + rank; g < g1; g += C) states[(g - g0) / C] = s.games.load(int(g));
  // Where the trunk's h1 rows go in global memory (step t + 1's at rows t N.. of s.next's).
  T* const h1_out = reinterpret_cast<T*>(sizeof(T) == sizeof(float) ? static_cast<void*>(s.next.h1)
                                                                    : static_cast<void*>(s.next.h1_bf16));
  const uint32_t epoch = *s.epoch;  // once: after every mailbox wait (an L1 invalidation) it would come from L2 again
  // This block barrier orders the states' stores before warps 1.. read them (ClusterHooks' game
  // ahead). The cluster barrier after it would too, but racecheck does not seem to count a cluster
  // barrier as the block's own: on the H200 every hazard it printed was one of these.
  __syncthreads();
  HeldW1<kHeld> held;  // the warp's tiles of W1 in registers (kHeld > 0), from ws, staged before the barrier
  if constexpr (kHeld > 0) load_held_w1(held, ws, cols, H);
  GRPO_CLUSTER_SYNC();  // every block of the cluster has started: its shared memory and mailboxes may be written
  span_mark(clocks, false);

  // A step's two exchanges go through mailboxes, not cluster barriers: each block waits for the
  // bytes it reads, not for every thread of the cluster. What a barrier also gave follows from
  // the data and the block barriers:
  //   - a phase's bytes land after the receiver's phase before it completed: block b sends a1 of
  //     step t + 1 after its wait for the h1 rows of step t + 1, which the receiving game's block
  //     sends after its threads passed their a1 wait of step t; b sends h1 of step t + 2 after
  //     its a1 wait of step t + 1, which needs every block's columns of it (every block has
  //     columns), each sent after that block's threads passed their h1 wait of step t + 1;
  //   - a block's a1 rows are free before another block writes them: block b sends a game's a1
  //     row of step t + 1 only after its product, which waited for that game's h1 row of step
  //     t + 1, which the game's block sends after its last read of that a1 row of step t (the
  //     head, and the copy out while thread 0 plays, before the trunk's barrier);
  //   - xs is: a thread (a warp, on tensor cores: after a __syncwarp) that reads game row r of xs
  //     in b's product sends a1 of row r to r's block, whose h1 row of the next step waits for it
  //     (so every block has columns, and lanes past the cluster's rows read nothing); where that
  //     block is b itself, b's head barrier orders its own next h1 row after the read; the copy
  //     out reads only b's own game's row, before that game's barrier, after which b itself
  //     writes it;
  //   - within a block, mailbox_sent's barrier orders each thread's sends to its own block
  //     before the block's reads after the wait, and thread 0 arrives for a phase only after
  //     every thread's wait of the phase before; the wait itself orders nothing in the block:
  //     what a thread reads of sh and of the states after it was written at the step before
  //     has the head's or the game's __syncthreads between.
  const uint32_t a1_remote = a1_bytes(rows, rank, H, cols), xs_remote = h1_bytes<T>(rows, rank, H);
  uint32_t a1_parity = 0, xs_parity = 0;
  for (uint32_t t = 0; t < steps; ++t, a1_parity ^= 1u) {
    const size_t shift = size_t(t) * N;  // step t's rows
    const bool last = t + 1 == steps;
    phase_mark(clocks, t, kMarkStep);
    const A1Out out{a1s + c0, at.a1_pitch, a1_box};
    if constexpr (kMma)
      product_mma(xs, ws, rows, cols, H, held, out);
    else
      product(xs, ws, rows, cols, width, H, out);
    phase_mark(clocks, t, kMarkProduct);
    mailbox_sent(a1_box, a1_remote);  // the wait: the first game's hooks.ready()
    if (g0 + rank >= g1) {            // a block without a game
      phase_mark(clocks, t, kMarkDrawn);
      ClusterHooks<T>::wait_for_a1(a1_box, a1_parity, spin);
      phase_mark(clocks, t, kMarkA1);
    }
    for (unsigned g = g0 + rank; g < g1; g += C) {
      const unsigned i = g - g0;
      // One group a thread kept in registers (H <= 512); a wider step computes the others' h0
      // again, or reads it back where it stored it.
      const float* a1_row = a1s + size_t(i / C) * at.a1_pitch;
      T* const h1_row_out =
          t > 0 ? h1_out + (shift - N + g) * H : nullptr;  // step t's row: rows (t - 1) N.. of s.next's
      const ClusterHooks<T> hooks(xs, stride, i, H, GamesOnChip{states, s.games, g0, last}, s.now.a1 + (shift + g) * H,
                                  h1_row_out, a1_row, g == g0 + rank, a1_box, xs_box, a1_parity, spin, clocks, t);
      rollout_step_block<kVec, 1>(cfg, s, p, epoch, t, shift, g, last, sh, a1_row, hooks);
      if (g + C < g1) __syncthreads();  // sh is the next game's (after the last, the next step's head orders it)
    }
    if (last) break;
    phase_mark(clocks, t, kMarkTrunk);
    mailbox_sent(xs_box, xs_remote);
    GRPO_MAILBOX_WAIT_OR_SPIN(xs_box, xs_parity, spin);  // the h1 rows of step t + 1, every game's
    phase_mark(clocks, t, kMarkH1);
    xs_parity ^= 1u;
  }
  span_mark(clocks, true);
  release_next_kernel();  // the kernel after starts only now: its blocks would sit on the SMs for the whole rollout
  GRPO_CLUSTER_SYNC();    // no block exits while a send to it may be in flight
}

struct Plan {
  unsigned clusters = 0;  // 0: the shape does not fit
  size_t smem = 0;
};

// Whether hidden H runs the compilation with tiles of W1 held in registers (tensor cores only).
template <bool kMma>
constexpr bool holds_w1(unsigned H) {
  return kMma && H >= kMmaChains * unsigned(kFewRowsSumTile);
}
constexpr unsigned held_tiles(bool kMma) { return kMma ? kMmaHeldTiles : 0; }

// The two compilations a launch at hidden H may take (kVec, with W1's tiles held where holds_w1,
// and any H): a plan must hold for both.
template <class T, bool kMma>
std::array<const void*, 2> cluster_kernels(unsigned H) {
  const void* vec = holds_w1<kMma>(H)
                        ? reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, true, held_tiles(kMma)>)
                        : reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, true>);
  return {vec, reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, false>)};
}

// Every compilation, for what is set or read for all of them (without tensor cores the third is
// the first again: held_tiles is 0).
template <class T, bool kMma>
std::array<const void*, 3> all_cluster_kernels() {
  return {reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, true>),
          reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, false>),
          reinterpret_cast<const void*>(&rollout_cluster_kernel<T, kMma, true, held_tiles(kMma)>)};
}

// Dynamic shared memory a block may have: the device's opt-in limit less the static StepScratch;
// 0 where the device runs no clusters.
template <class T, bool kMma>
size_t smem_limit() {
  int dev = 0, optin = 0, cluster_launch = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
  if (!cluster_launch) return 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  // The static part as compiled (StepScratch and whatever the callees declare), not as counted here.
  size_t fixed = sizeof(StepScratch<1>);
  for (const void* kernel : all_cluster_kernels<T, kMma>()) {
    cudaFuncAttributes f{};
    CUDA_CHECK(cudaFuncGetAttributes(&f, kernel));
    fixed = std::max(fixed, f.sharedSizeBytes);
  }
  return size_t(std::max(optin - int(fixed), 0));
}

// The kernel may ask for up to smem_limit(): always the same value, so a later launch never
// lowers the limit below what a captured graph's node asks for. Not a stream operation: allowed
// while a stream captures.
template <class T, bool kMma>
void allow_smem(size_t limit) {
  for (const void* kernel : all_cluster_kernels<T, kMma>())
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)));
}

// Clusters of p's size that the device can hold at once (its answer: the blocks of a cluster
// share a GPC, so it can be fewer than SMs / 8), the fewer of the two compilations' (their
// registers differ).
template <class T, bool kMma>
int resident_clusters(const Plan& p, unsigned H) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config =
      cluster_config(dim3(p.clusters * kClusterBlocks), dim3(kStepThreads), p.smem, nullptr, kClusterBlocks, attr);
  int fewest = std::numeric_limits<int>::max();
  for (const void* kernel : cluster_kernels<T, kMma>(H)) {
    int n = 0;
    // A device that cannot answer for this configuration (under MPS or MIG, say) holds none: the
    // rollout then runs stepwise. The error is not sticky; it is cleared so no later check sees it.
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    fewest = std::min(fewest, n);
  }
  return fewest;
}

// The clusters and the shared memory per block. By default one game a block (ceil(N / 8)
// clusters) where the device holds that many clusters at once, else the most clusters it holds
// (more rows, so more shared memory, each): the blocks of a cluster wait for each other every
// step, so one-game blocks make the shortest step, and a cluster left waiting for room would
// run its whole rollout after the others. Worked out once per device and shape (the occupancy
// queries are not free, and an eager run asks at every epoch), which also sets the kernel's
// shared-memory limit on that device.
template <class T, bool kMma>
Plan plan_uncached(int N, int H, int D, unsigned clusters) {
  const size_t width = (size_t(H) + kClusterBlocks - 1) / kClusterBlocks, limit = smem_limit<T, kMma>();
  const auto with = [&](int k) {
    Plan p;
    p.clusters = unsigned(std::clamp(k, 1, N));
    const SmemLayout at(unsigned(H), unsigned(D), unsigned(width), unsigned((N + p.clusters - 1) / p.clusters),
                        smem_stride(unsigned(H), kMma), sizeof(T));
    // The vector accesses' alignment (16-byte rows of fp32 and a1, 8-byte of bf16), which the
    // emulator cannot check: a misaligned float4 faults only on a GPU.
    if (at.ws % 16 != 0 || at.xs % (sizeof(T) == 4 ? 16 : 8) != 0 || at.a1 % 16 != 0 || at.games % 16 != 0 ||
        smem_stride(unsigned(H), kMma) * sizeof(T) % (sizeof(T) == 4 ? 16 : 8) != 0)
      throw std::logic_error("rollout_cluster_cuda: shared-memory layout misaligned");
    p.smem = at.bytes;
    return p;
  };
  if (limit == 0) return Plan{};
  allow_smem<T, kMma>(limit);
  if (clusters) {
    const Plan p = with(int(clusters));
    return p.smem <= limit ? p : Plan{};
  }
  for (int k = (N + int(kClusterBlocks) - 1) / int(kClusterBlocks); k >= 1; --k) {
    const Plan p = with(k);
    if (p.smem <= limit && resident_clusters<T, kMma>(p, unsigned(H)) >= k) return p;
  }
  return Plan{};
}

template <class T, bool kMma>
Plan plan_for(int N, int H, int D, unsigned clusters = 0) {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  static std::map<std::tuple<int, int, int, int, unsigned>, Plan> plans;
  const auto key = std::make_tuple(dev, N, H, D, clusters);
  const auto it = plans.find(key);
  return it != plans.end() ? it->second : plans.emplace(key, plan_uncached<T, kMma>(N, H, D, clusters)).first->second;
}

template <class T, bool kMma>
void launch_rollout(const GameConfig& game, const Ops::RolloutStep& first, const T* X, const T* W, int steps,
                    cudaStream_t stream, unsigned clusters, const PhaseClocks& clocks, ClusterWait wait) {
  const Plan p = plan_for<T, kMma>(first.N, first.H, first.D, clusters);
  if (p.clusters == 0)
    throw std::invalid_argument("rollout_cluster_cuda: " + std::to_string(first.N) + " games at hidden " +
                                std::to_string(first.H) + " need more shared memory per block than the " +
                                std::to_string(smem_limit<T, kMma>()) +
                                " bytes the device has, or clusters it cannot hold");
  const auto kernel = !rollout_step_vec(first)            ? rollout_cluster_kernel<T, kMma, false>
                      : holds_w1<kMma>(unsigned(first.H)) ? rollout_cluster_kernel<T, kMma, true, held_tiles(kMma)>
                                                          : rollout_cluster_kernel<T, kMma, true>;
  launch_cluster_overlapped(kernel, dim3(p.clusters * kClusterBlocks), dim3(kStepThreads), p.smem, stream,
                            kClusterBlocks, game, first, X, W, uint32_t(steps), p.clusters, clocks,
                            wait == ClusterWait::Spin);
}

}  // namespace

bool rollout_cluster_fits(int N, int H, int D, bool bf16, ClusterProduct product) {
  if (!linear_forward_takes_few_rows(N, H, H, false)) return false;
  if (product == ClusterProduct::TensorCores) return bf16 && plan_for<Bf16, true>(N, H, D).clusters > 0;
  return (bf16 ? plan_for<Bf16, false>(N, H, D) : plan_for<float, false>(N, H, D)).clusters > 0;
}

void rollout_cluster_cuda(const GameConfig& game, const Ops::RolloutStep& first, int steps, cudaStream_t stream,
                          ClusterProduct product, unsigned clusters, const PhaseClocks& clocks, ClusterWait wait) {
  check_rollout_step_args(game, first, "rollout_cluster_cuda");
  if (clocks.at && (clocks.marks > kClusterMarks || clocks.warps > kClusterWarps))
    throw std::invalid_argument("rollout_cluster_cuda: phase clocks of " + std::to_string(clocks.marks) +
                                " marks and " + std::to_string(clocks.warps) + " warps; the kernel has " +
                                std::to_string(kClusterMarks) + " and " + std::to_string(kClusterWarps));
  if (steps < 1 || first.t != 0 || (first.obs_next == nullptr && steps > 1))
    throw std::invalid_argument("rollout_cluster_cuda: needs step 0's views and at least one step");
  if (!linear_forward_takes_few_rows(first.N, first.H, first.H, false))
    throw std::invalid_argument("rollout_cluster_cuda: " + std::to_string(first.N) + " games at hidden " +
                                std::to_string(first.H) + " are not the few-row product's shape");
  if (product == ClusterProduct::TensorCores && !first.p.fc1_w_bf16)
    throw std::invalid_argument("rollout_cluster_cuda: the product on tensor cores needs bf16 operands");
  // The kernel copies h1 rows of its operands' type to global memory: bf16 exactly where the
  // trunk would write the bf16 copy.
  if ((first.p.fc1_w_bf16 != nullptr) != (first.next.h1_bf16 != nullptr) ||
      (first.p.fc1_w_bf16 != nullptr) != (first.now.h1_bf16 != nullptr))
    throw std::invalid_argument("rollout_cluster_cuda: h1's bf16 copies and fc1.weight's go together");
  if (first.N == 0) return;
  const auto X = static_cast<const Bf16*>(first.now.h1_bf16);
  const auto W = static_cast<const Bf16*>(first.p.fc1_w_bf16);
  if (product == ClusterProduct::TensorCores)
    launch_rollout<Bf16, true>(game, first, X, W, steps, stream, clusters, clocks, wait);
  else if (first.p.fc1_w_bf16)
    launch_rollout<Bf16, false>(game, first, X, W, steps, stream, clusters, clocks, wait);
  else
    launch_rollout<float, false>(game, first, static_cast<const float*>(first.now.h1),
                                 static_cast<const float*>(first.p.fc1_w), steps, stream, clusters, clocks, wait);
}

}  // namespace grpo
