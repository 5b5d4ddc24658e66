#!/usr/bin/python3
"""The PyTorch peer of grpo.cu: the reference training algorithm, written as a PyTorch user would.

spec/training.md ("reference" algorithm) on spec/fruit_catcher.md, with the game as batched
tensors on the device: all N = G * R games step at once, no host read per game step, no Python
loop over games. It does not reproduce the engine's Philox bits (torch's generator, seeded by
--seed, draws everything); otherwise it follows the rules and formulas of the two specs.

    /usr/bin/python3 bench/torch_baseline.py --preset small --device cpu --threads 2 --json out.json
    python3 bench/torch_baseline.py --preset reference --device cuda --compile

Timing: every epoch is bracketed by a device synchronisation; the first --warmup epochs (which
include torch.compile's compilation and CUDA-graph recording) are not timed; the figures are the
median over the timed epochs. One line per epoch on stderr, a one-line summary on stdout.
"""
import argparse
import json
import math
import platform
import statistics
import sys
import time

try:
    import torch
except ImportError:  # main() says so and exits 77 ("skipped" for the test that runs this)
    torch = None

# The game's defaults (spec/fruit_catcher.md, "Parameters"), as the engine runs them.
SCREEN_W, SCREEN_H, SPRITE_W = 20, 15, 3
MAX_FRUITS, MIN_FRUITS, MIN_INTERVAL = 3, 1, 5
GROUPS = SCREEN_W - 3                 # start groups G; group g starts with the sprite at g + 1
OBS_DIM = 1 + 3 * MAX_FRUITS          # D
ACTIONS = 3
# Algorithm constants (spec/training.md).
DROPOUT, GAMMA, ENTROPY_COEF, MAX_GRAD_NORM, WEIGHT_DECAY = 0.1, 0.99, 0.01, 1.0, 1e-5
LR_STEP, LR_DECAY = 1000, 0.95

PRESETS = {
    "small": dict(hidden_size=512, batch_size=8, max_steps=200, lr=5e-4),
    "reference": dict(hidden_size=2048, batch_size=32, max_steps=100, lr=1e-4),
}

# Columns of the packed int32 game state [N, STATE_COLS]: sprite x, score, bottomed, then the
# fruit slots' x, y and active flag (one block of MAX_FRUITS columns each).
SX, SCORE, BOTTOMED = 0, 1, 2
FX = slice(3, 3 + MAX_FRUITS)
FY = slice(3 + MAX_FRUITS, 3 + 2 * MAX_FRUITS)
ACT = slice(3 + 2 * MAX_FRUITS, 3 + 3 * MAX_FRUITS)
STATE_COLS = 3 + 3 * MAX_FRUITS
# Columns of one rollout record [N, REC_COLS] (float32): the observation, the action, the reward.
REC_ACTION, REC_REWARD = OBS_DIM, OBS_DIM + 1
REC_COLS = OBS_DIM + 2


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's default prints the usage block too)
        print(f"torch_baseline: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    ap = Parser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument("--hidden-size", type=int)
    ap.add_argument("--batch-size", type=int, help="replicas R per start group; N = (W - 3) * R games")
    ap.add_argument("--max-steps", type=int, help="steps T per epoch")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs, after the warm-up (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed epochs run first, compilation included (default 2)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--device", choices=["cpu", "cuda"])
    ap.add_argument("--compile", action="store_true", help="torch.compile the rollout step and the loss")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    for k, v in PRESETS[args.preset].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    checks = [("--hidden-size", args.hidden_size >= 1), ("--batch-size", args.batch_size >= 1),
              ("--max-steps", args.max_steps >= 1), ("--epochs", args.epochs >= 1),
              ("--warmup", args.warmup >= 0),
              ("--lr", math.isfinite(args.lr) and args.lr > 0),
              ("--threads", args.threads is None or args.threads >= 1)]
    for flag, ok in checks:
        if not ok:
            rule = "must not be negative" if flag == "--warmup" else "must be positive"
            raise UsageError(f"{flag}: {rule}")
    return args


def observe(s):
    """[sprite_x, x0, y0, a0, x1, ...] as float32, raw values (inactive slots keep x and y)."""
    fruits = torch.stack([s[:, FX], s[:, FY], s[:, ACT]], dim=2).reshape(s.shape[0], 3 * MAX_FRUITS)
    return torch.cat([s[:, SX:SX + 1], fruits], dim=1).to(torch.float32)


def game_step(s, action, coin, spawn_x):
    """spec/fruit_catcher.md "One step" for every game at once: state [N, STATE_COLS] int32,
    action [N] in {0, 1, 2}, coin [N] in [0, 1), spawn_x [N, MAX_FRUITS] in [0, W-1]."""
    half = SPRITE_W // 2
    sx = (s[:, SX] + action - 1).clamp(0, SCREEN_W - 1)                         # 1. move
    fx, act = s[:, FX], s[:, ACT].bool()
    fy = s[:, FY] + act.to(torch.int32)                                         # 2. fall
    gone = act & (fy >= SCREEN_H - 1)                                           # 3. bottom or off
    at_bottom = act & (fy == SCREEN_H - 1)
    inside = (fx >= (sx - half)[:, None]) & (fx <= (sx + half)[:, None])        # 4. catch
    caught = (at_bottom & inside).sum(dim=1, dtype=torch.int32)
    missed = at_bottom.sum(dim=1, dtype=torch.int32) - caught
    act = act & ~gone                                                           # 5. deactivate
    g = gone.sum(dim=1, dtype=torch.int32)
    score = s[:, SCORE] + caught - missed                                       # 6. counters
    bottomed = s[:, BOTTOMED] + g
    nact = act.sum(dim=1, dtype=torch.int32)                                    # 7. spawn
    rand = (g == 0) & (nact < MAX_FRUITS) & (nact >= MIN_FRUITS) & (coin > 0.5)
    need = rand.to(torch.int32) + (MIN_FRUITS - nact).clamp(min=0)
    min_y = torch.where(act, fy, torch.full_like(fy, torch.iinfo(torch.int32).max)).amin(dim=1)
    gate = (nact == 0) | (min_y >= MIN_INTERVAL)
    count = torch.where(gate, torch.minimum(need, MAX_FRUITS - nact), torch.zeros_like(need))
    free = ~act
    rank = free.to(torch.int32).cumsum(dim=1, dtype=torch.int32) - 1            # j among free slots
    new = free & (rank < count[:, None])                                        # lowest free first
    fx = torch.where(new, spawn_x.gather(1, rank.clamp(min=0).long()), fx)
    fy = torch.where(new, torch.zeros_like(fy), fy)
    act = act | new
    return torch.cat([sx[:, None], score[:, None], bottomed[:, None], fx, fy, act.to(torch.int32)], dim=1)


def step_reward(first, score_before, s):
    """spec/training.md step 2, from the counters after the step (float32)."""
    score = s[:, SCORE]
    if first:
        c = score.clamp(min=0).float() / s[:, BOTTOMED].clamp(min=1).float()
        r = 0.1 * score.float() + 0.5 * torch.expm1(c) + 0.05
    else:
        d = (score - score_before).float()
        r = d.clamp(min=0) + 0.5 * d.clamp(max=0) - 0.01 + 0.05
    return r.clamp(-2.0, 2.0)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def build(args, device):
    """The policy, the optimiser, the schedule and the two functions an epoch calls."""
    nn, F = torch.nn, torch.nn.functional

    class Policy(nn.Module):
        """spec/training.md: h0 = W_in x; h1 = h0 + LN(gelu(h0)); h2 = dropout(gelu(W1 h1 + b1));
        log_softmax(W_out h2 + b_out). Parameter names as the engine's checkpoints."""

        def __init__(self, hidden):
            super().__init__()
            self.fc_in = nn.Linear(OBS_DIM, hidden, bias=False)
            self.layer_norm = nn.LayerNorm(hidden, eps=1e-5)
            self.fc1 = nn.Linear(hidden, hidden)
            self.fc_out = nn.Linear(hidden, ACTIONS)
            self.dropout = nn.Dropout(DROPOUT)
            with torch.no_grad():
                nn.init.normal_(self.fc_in.weight, 0.0, 0.02)
                nn.init.kaiming_normal_(self.fc1.weight, mode="fan_in", nonlinearity="relu")
                nn.init.zeros_(self.fc1.bias)
                nn.init.normal_(self.fc_out.weight, 0.0, 0.01)
                nn.init.zeros_(self.fc_out.bias)

        def forward(self, x):
            h0 = self.fc_in(x)
            h1 = h0 + self.layer_norm(F.gelu(h0, approximate="tanh"))
            h2 = self.dropout(F.gelu(self.fc1(h1), approximate="tanh"))
            return torch.log_softmax(self.fc_out(h2), dim=-1)

    model = Policy(args.hidden_size).to(device)
    model.train()  # the reference keeps dropout active in the rollout and in the loss pass
    kw = dict(lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=WEIGHT_DECAY)
    opt, opt_kind = None, None
    # fused on CUDA (one kernel for every parameter), else foreach (a few multi-tensor kernels).
    for kind in ("fused", "foreach") if device.type == "cuda" else ("foreach",):
        try:
            opt, opt_kind = torch.optim.AdamW(model.parameters(), **{kind: True}, **kw), kind
            break
        except (TypeError, RuntimeError, ValueError):  # this torch or this device lacks it
            continue
    if opt is None:
        opt, opt_kind = torch.optim.AdamW(model.parameters(), **kw), "for-loop"
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=LR_STEP, gamma=LR_DECAY)

    n = GROUPS * args.batch_size
    # R = disc @ r gives R_t = sum_{k >= t} 0.99^(k - t) r_k, i.e. R_t = r_t + 0.99 R_{t+1}, R_T = 0,
    # as one [T, T] x [T, N] product instead of T dependent steps.
    idx = torch.arange(args.max_steps, dtype=torch.float64)
    expo = idx[None, :] - idx[:, None]
    disc = torch.where(expo >= 0, GAMMA ** expo.clamp(min=0), torch.zeros((), dtype=torch.float64)).to(torch.float32).to(device)

    def play_step(s, first: bool):
        """o_t, a_t ~ pi(o_t) with dropout, one step of every game, r_t. Returns (state, record)."""
        obs = observe(s)
        logp = model(obs)
        u = torch.rand(n, device=s.device)
        cdf = logp.exp().cumsum(dim=1)
        action = (u[:, None] >= cdf[:, :2]).sum(dim=1, dtype=torch.int32)  # first a with u < cdf_a
        coin = torch.rand(n, device=s.device)
        spawn_x = torch.randint(0, SCREEN_W, (n, MAX_FRUITS), device=s.device, dtype=torch.int32)
        state = game_step(s, action, coin, spawn_x)
        r = step_reward(first, s[:, SCORE], state)
        record = torch.cat([obs, action.float()[:, None], r[:, None]], dim=1)
        return state, record

    def loss_fn(rec):
        """Returns, normalised advantages and the loss over all T * N samples (fresh dropout)."""
        obs = rec[:, :, :OBS_DIM].reshape(-1, OBS_DIM)
        action = rec[:, :, REC_ACTION].reshape(-1).long()
        ret = disc @ rec[:, :, REC_REWARD]                                      # [T, N]
        m, sd = ret.mean(), ret.std()                                           # sample sd (T*N - 1)
        adv = ((ret - 0.5 * m) / (sd.clamp(min=0.5) + 1e-6)).clamp(-2.0, 2.0).reshape(-1)
        logp = model(obs)
        entropy = -(logp.exp() * logp).sum(dim=1)
        chosen = logp.gather(1, action[:, None]).squeeze(1)
        return (-chosen * adv.clamp(-5.0, 5.0)).mean() - ENTROPY_COEF * entropy.mean()

    return model, opt, opt_kind, sched, play_step, loss_fn


def main(argv):
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"torch_baseline: {e}", file=sys.stderr)
        return 2
    if torch is None:
        print("torch_baseline: torch is not importable by this interpreter "
              f"({sys.executable}); on Debian: apt-get install python3-torch", file=sys.stderr)
        return 77
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"torch_baseline: --device cuda: torch {torch.__version__} sees no CUDA device", file=sys.stderr)
        return 2
    if args.compile and not hasattr(torch, "compile"):
        print(f"torch_baseline: --compile needs torch.compile (torch >= 2.0); this is torch {torch.__version__}",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products, as the engine's default
    torch.manual_seed(args.seed)

    model, opt, opt_kind, sched, play_step, loss_fn = build(args, device)
    n, T = GROUPS * args.batch_size, args.max_steps
    mark_step = lambda: None  # noqa: E731
    if args.compile:
        mode = "reduce-overhead" if cuda else "default"  # reduce-overhead: CUDA graphs
        play_step = torch.compile(play_step, mode=mode)
        loss_fn = torch.compile(loss_fn, mode=mode)
        if cuda and hasattr(torch, "compiler") and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
            # Every call is its own CUDA-graph step: its outputs are copied out before the next.
            mark_step = torch.compiler.cudagraph_mark_step_begin
    state = torch.empty(n, STATE_COLS, dtype=torch.int32, device=device)
    records = torch.empty(T, n, REC_COLS, dtype=torch.float32, device=device)
    group_sprite = (torch.arange(GROUPS, dtype=torch.int32, device=device) + 1).repeat_interleave(args.batch_size)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    total = args.warmup + args.epochs
    times, scores, losses = [], [], []
    for epoch in range(total):
        sync()
        t0 = time.perf_counter()
        # Start of the epoch: group g's R replicas share sprite x = g + 1 and slot 0's fresh x.
        start_x = torch.randint(0, SCREEN_W, (GROUPS,), device=device, dtype=torch.int32)
        state.zero_()
        state[:, SX] = group_sprite
        state[:, FX.start] = start_x.repeat_interleave(args.batch_size)
        state[:, ACT.start] = 1
        with torch.no_grad():
            for t in range(T):
                mark_step()
                new_state, rec = play_step(state, t == 0)
                records[t].copy_(rec)
                state.copy_(new_state)
        mark_step()
        loss = loss_fn(records)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        score = state[:, SCORE].float().mean()
        sync()
        dt = time.perf_counter() - t0
        scores.append(float(score))
        losses.append(float(loss.detach()))
        timed = epoch >= args.warmup
        if timed:
            times.append(dt)
        print(f"epoch {epoch + 1}/{total}: {dt:.4f} s{'' if timed else ' (warm-up)'}, "
              f"score {scores[-1]:.3f}, loss {losses[-1]:.5f}", file=sys.stderr, flush=True)

    med = statistics.median(times)
    mode = "compile" if args.compile else "eager"
    dev_name = torch.cuda.get_device_name(device) if cuda else cpu_model()
    # score and loss: one entry per epoch run, warm-up first; epoch_s: the timed epochs only.
    result = dict(
        epochs_per_s=1.0 / med, epoch_s_median=med, game_steps_per_s=n * T / med, epoch_s=times,
        score=scores, loss=losses, device=dev_name, device_type=device.type, torch_version=torch.__version__,
        mode=mode, optimizer=f"AdamW ({opt_kind})", warmup=args.warmup, epochs=args.epochs,
        config=dict(preset=args.preset, hidden=args.hidden_size, batch=args.batch_size, steps=T,
                    games=n, lr=args.lr, seed=args.seed, threads=torch.get_num_threads(), groups=GROUPS,
                    screen_width=SCREEN_W, screen_height=SCREEN_H, sprite_width=SPRITE_W,
                    max_fruits=MAX_FRUITS, min_fruits=MIN_FRUITS, min_interval_steps=MIN_INTERVAL,
                    dropout=DROPOUT))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    print(f"torch_baseline: {mode} on {dev_name} (torch {torch.__version__}, {result['config']['threads']} threads): "
          f"hidden {args.hidden_size}, {n} games x {T} steps: {med:.4f} s/epoch (median of {len(times)}), "
          f"{1.0 / med:.3f} epochs/s, {n * T / med:,.0f} game steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
