// `grpo info`: the counts behind a configuration (parameters, FLOPs and minimum bytes per epoch,
// arena size) and, with a CUDA executor, the node count of the captured epoch graph.
#include <cstdio>

#include "cli/commands.h"
#include "engine/cost.h"
#include "engine/executor.h"
#include "cli/train_flags.h"

namespace grpo {

namespace {
int run_info(CLI::App& app, const TrainFlags& f, bool capture) {
  const TrainConfig c = resolve_train_flags(app, f);
  const ParamLayout pl(c.hidden_size, c.obs_dim());
  const ArenaLayout al(c);
  const EpochCost k = epoch_cost(c);
  std::printf("configuration      hidden %d, obs %d, %d games (%d groups x %d), %d steps, M = %lld samples\n",
              c.hidden_size, c.obs_dim(), c.games(), c.game.groups(), c.batch_size, c.max_steps,
              static_cast<long long>(c.samples()));
  std::printf("parameters         %zu (slab %zu floats x 4: params, grads, adam m, adam v = %.1f MiB)\n", pl.count,
              pl.total, 4.0 * pl.total * 4 / (1 << 20));
  for (const ParamTensor& t : pl.tensors) std::printf("  %-18s [%d, %d]\n", t.name, t.rows, t.cols);
  std::printf("arena              %.1f MiB (activations, rollout record, game state, scratch)\n",
              double(al.total) / (1 << 20));
  if (c.algo == Algo::Grpo)
    std::printf(
        "FLOPs per epoch    %.3g (rollout 2MP, then %d passes of loss forward 2MP and backward 4MP); executed %.3g "
        "(the first of %d updates reuses the rollout's trunk, the later ones recompute their slice's)\n",
        k.flops, c.ppo_epochs, k.flops_executed, c.ppo_epochs * c.minibatches);
  else
    std::printf(
        "FLOPs per epoch    %.3g (rollout 2MP, loss forward 2MP, backward 4MP); executed %.3g (the loss pass "
        "reuses the rollout's trunk: its forward is the head alone)\n",
        k.flops, k.flops_executed);
  std::printf("min bytes/epoch    %.3g\n", k.min_bytes);
  std::printf("rollout            %d sequential steps per epoch (its latency floor)\n", c.max_steps);
  if (!capture) return 0;
  std::string why;
  if (!cuda_device_available(&why)) {
    std::printf("graph nodes        n/a (%s)\n", why.c_str());
    return 0;
  }
#if defined(GRPO_HAVE_CUDA)
  TrainConfig g = c;
  g.backend = Backend::Cuda;
  std::unique_ptr<Executor> ex = make_cuda_executor(g);
  ex->set_state(initial_state(g));  // capture_graph's warm-up epoch runs on the run's first state
  const Executor::GraphSize size = ex->capture_graph();
  std::printf("graph nodes        %zu (one epoch, captured on %s; %zu node runs per replay)\n", size.nodes,
              ex->describe().c_str(), size.runs);
  // By kind: what a real cuBLAS adds (a split-K product's reduction, a memset) shows here.
  std::printf("graph node kinds   %zu kernel, %zu memset, %zu memcpy, %zu conditional, %zu other; %zu in loop bodies\n",
              size.kernels, size.memsets, size.memcpys, size.conditionals, size.other,
              size.nodes - (size.kernels + size.memsets + size.memcpys + size.conditionals + size.other));
  std::printf(
      "graph edges        %zu, %zu from a kernel to a kernel, %zu programmatic (into a kernel that may start "
      "before the one before it ends), %zu into a library's kernel (cuBLAS launches those)\n",
      size.edges, size.kernel_edges, size.programmatic, size.into_library);
#endif
  return 0;
}

struct InfoState {
  TrainFlags flags;
  bool graph = false;
};
}  // namespace

Command add_info_command(CLI::App& app) {
  auto st = std::make_shared<InfoState>();
  CLI::App* sub = app.add_subcommand("info", "counts for a configuration (takes the train flags)");
  add_train_flags(*sub, st->flags);
  sub->add_flag("--graph", st->graph, "also capture the epoch graph on the CUDA executor and count its nodes");
  return {sub, [sub, st] { return run_info(*sub, st->flags, st->graph); }};
}

}  // namespace grpo
