// The device backend of `grpo replay`: the start states are built on the host, copied into a
// device state block of the same layout, and each step runs games_step_explicit_cuda. Plain
// synchronous copies: this is a conformance tool, not the training loop.
#include <cuda_runtime.h>

#include "env/games.h"
#include "env/replay.h"
#include "core/cuda_check.h"

namespace grpo {

namespace {
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, (n ? n : 1) * sizeof(T))); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  void upload(const T* src) { CUDA_CHECK(cudaMemcpy(p_, src, n_ * sizeof(T), cudaMemcpyHostToDevice)); }

 private:
  T* p_ = nullptr;
  size_t n_;
};

template <class T>
void download(std::vector<T>& dst, const T* src, size_t n) {
  dst.resize(n);
  CUDA_CHECK(cudaMemcpy(dst.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost));
}
}  // namespace

void replay_cuda(const ReplayDocument& doc, const ReplayEmit& emit) {
  const GameConfig& cfg = doc.cfg;
  const int n = doc.n;
  const size_t d = static_cast<size_t>(cfg.obs_dim());
  const size_t bytes = games_state_bytes(cfg, n);
  std::vector<unsigned char> host_block(bytes);
  const GamesView hv = make_games_view(cfg, n, host_block.data());
  for (int g = 0; g < n; ++g) hv.store(g, doc.start[g]);

  DeviceArray<unsigned char> block(bytes);
  block.upload(host_block.data());
  const GamesView v = make_games_view(cfg, n, block.get());
  DeviceArray<int32_t> actions(n), spawn_x(static_cast<size_t>(n) * cfg.max_fruits);
  DeviceArray<float> coins(n), reward(n), obs(n * d);

  ReplayFrame f;
  for (size_t t = 0; t < doc.steps.size(); ++t) {
    const ReplayStep& s = doc.steps[t];
    actions.upload(s.actions.data());
    coins.upload(s.coins.data());
    spawn_x.upload(s.spawn_x.data());
    games_step_explicit_cuda(cfg, v, actions.get(), coins.get(), spawn_x.get(), static_cast<uint32_t>(t), reward.get(),
                             obs.get());
    CUDA_CHECK(cudaDeviceSynchronize());
    download(f.observations, obs.get(), n * d);
    download(f.reward, reward.get(), n);
    download(f.score, v.score, n);
    download(f.steps, v.steps, n);
    download(f.bottomed, v.bottomed, n);
    emit(static_cast<uint32_t>(t), f);
  }
}

}  // namespace grpo
