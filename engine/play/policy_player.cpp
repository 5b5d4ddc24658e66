#include "engine/play/policy_player.h"

#include <stdexcept>

#include "engine/host/ops.h"
#include "engine/policy.h"
#include "kernels/policy_head.h"

namespace grpo {

namespace {
constexpr int kActs = 5;  // h0, h1, a1, h2 [rows, hidden] and the logits + LN statistics block
}

HostPolicy::HostPolicy(const Checkpoint& ck, int max_rows) : cfg_(ck.config), max_rows_(max_rows) {
  const ParamLayout l(cfg_.hidden_size, cfg_.obs_dim());
  params_.assign(ck.state.slabs.begin(), ck.state.slabs.begin() + std::ptrdiff_t(l.total));
  acts_.assign(size_t(max_rows) * cfg_.hidden_size * kActs, 0.f);
}

const float* HostPolicy::forward(const float* obs, int rows, float dropout, uint64_t seed, uint32_t step) {
  if (rows > max_rows_) throw std::invalid_argument("HostPolicy::forward: more rows than it was made for");
  const int H = cfg_.hidden_size;
  const ParamLayout l(H, cfg_.obs_dim());
  float* base = acts_.data();
  const size_t big = size_t(max_rows_) * H;
  // The last block holds the logits [rows, 3] and the LayerNorm mean and rstd [rows] each.
  PolicyActs a{base,
               base + big,
               base + 2 * big,
               base + 3 * big,
               base + 4 * big,
               base + 4 * big + 3 * size_t(max_rows_),
               base + 4 * big + 4 * size_t(max_rows_)};
  HostOps ops(cfg_.game, cfg_.batch_size);
  const DropoutSpec drop{dropout, seed, Purpose::DropoutRollout, &epoch_, step};
  policy_forward(ops, ParamViews::over(params_.data(), l), obs, rows, cfg_.obs_dim(), H, a, drop);
  return a.logits;
}

int32_t choose_action(const float* z, bool greedy, float u) {
  if (greedy) {
    int32_t best = 0;
    for (int32_t k = 1; k < kActions; ++k)
      if (z[k] > z[best]) best = k;
    return best;
  }
  return sample_from(policy_row(z), u);
}

void HostPolicy::act(const GameConfig& g, const std::vector<GameState>& s, const PlayOptions& opt, uint32_t t,
                     int32_t* actions) {
  const int n = int(s.size()), D = cfg_.obs_dim();
  if (g.obs_dim() != D)
    throw std::invalid_argument("HostPolicy::act: the game's observations do not fit the checkpoint's network");
  obs_.resize(size_t(n) * D);
  for (int i = 0; i < n; ++i) write_observation(g, s[i], obs_.data() + size_t(i) * D);
  const float* logits = forward(obs_.data(), n, opt.dropout, opt.seed, t);
  for (int i = 0; i < n; ++i)
    actions[i] = choose_action(logits + size_t(i) * kActions, opt.greedy,
                               action_uniform(opt.seed, 0, t, uint32_t(opt.first_game + i)));
}

}  // namespace grpo
