// The vectorised game on the device: one thread per game, the rules of env/rules.h, state in the
// structure-of-arrays block of env/games.h. The epoch is read from device memory by the kernel
// (graph replay); seed and t are fixed per launch and may be captured.
#include "core/grid_dependency.cuh"
#include "env/games.h"
#include "core/launch.h"

namespace grpo {

namespace {
constexpr unsigned kThreads = 128;

__global__ void games_reset_kernel(GameConfig cfg, GamesView v, int replicas, uint64_t seed, const uint32_t* epoch,
                                   float* obs) {
  follow_previous_kernel();
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= v.n) return;
  reset_one_game(cfg, v, g, replicas, seed, *epoch, obs);
}

__global__ void games_step_kernel(GameConfig cfg, GamesView v, const int32_t* actions, uint64_t seed,
                                  const uint32_t* epoch, uint32_t t, float* reward, float* obs_next) {
  follow_previous_kernel();
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= v.n) return;
  const PhiloxDrawSource draws{cfg.screen_width, cfg.max_fruits, seed, *epoch, t};
  step_one_game(cfg, v, g, actions, draws, t, reward, obs_next);
}

__global__ void games_step_explicit_kernel(GameConfig cfg, GamesView v, const int32_t* actions, const float* coins,
                                           const int32_t* spawn_x, uint32_t t, float* reward, float* obs_next) {
  follow_previous_kernel();
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= v.n) return;
  const ExplicitDrawSource draws{cfg.max_fruits, coins, spawn_x};
  step_one_game(cfg, v, g, actions, draws, t, reward, obs_next);
}
}  // namespace

void games_reset_cuda(const GameConfig& cfg, const GamesView& view, int replicas, uint64_t seed, const uint32_t* epoch,
                      float* obs, cudaStream_t stream) {
  check_games_args(cfg, view, replicas < 1 ? -1 : replicas);
  if (view.n == 0) return;
  launch_overlapped(games_reset_kernel, dim3(ceil_div(view.n, kThreads)), dim3(kThreads), 0, stream, cfg, view,
                    replicas, seed, epoch, obs);
}

void games_step_cuda(const GameConfig& cfg, const GamesView& view, const int32_t* actions, uint64_t seed,
                     const uint32_t* epoch, uint32_t t, float* reward, float* obs_next, cudaStream_t stream) {
  check_games_args(cfg, view);
  if (view.n == 0) return;
  launch_overlapped(games_step_kernel, dim3(ceil_div(view.n, kThreads)), dim3(kThreads), 0, stream, cfg, view, actions,
                    seed, epoch, t, reward, obs_next);
}

void games_step_explicit_cuda(const GameConfig& cfg, const GamesView& view, const int32_t* actions, const float* coins,
                              const int32_t* spawn_x, uint32_t t, float* reward, float* obs_next, cudaStream_t stream) {
  check_games_args(cfg, view);
  if (view.n == 0) return;
  launch_overlapped(games_step_explicit_kernel, dim3(ceil_div(view.n, kThreads)), dim3(kThreads), 0, stream, cfg, view,
                    actions, coins, spawn_x, t, reward, obs_next);
}

}  // namespace grpo
