#!/usr/bin/python3
"""Checks bench/torch_baseline.py (ctest, tests/tools/torch_baseline.cmake).

  torch_baseline_check.py run BASELINE      runs it on the CPU at a tiny configuration and checks
                                            the JSON it writes (fields, lengths, sane values)
  torch_baseline_check.py replay BASELINE GRPO
                                            steps its batched game and rewards on random states,
                                            actions and draws, and compares every step with
                                            `GRPO replay` (the engine's rules) fed the same input

Debian's torch lives in the system interpreter, which the one CMake finds (pyenv, a venv) may not
see, and the other way round: when this interpreter cannot import torch, the checker runs itself
again under the first of /usr/bin/python3 and python3 on PATH that can.

Exit 0 when everything matches, 1 on a mismatch (one line per finding), 77 when no candidate
interpreter imports torch (the test is then reported as skipped).
"""
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    torch = None


def interpreter_with_torch():
    """The first candidate interpreter other than this one that imports torch, or None."""
    here = os.path.realpath(sys.executable)
    for cand in ("/usr/bin/python3", shutil.which("python3")):
        if not cand or not os.path.exists(cand) or os.path.realpath(cand) == here:
            continue
        if subprocess.run([cand, "-c", "import torch"], capture_output=True).returncode == 0:
            return cand
    return None


def torch_warning(line):
    """A line of a warning that importing torch printed (e.g. a wheel without numpy), not the script's."""
    return "Warning:" in line or line.startswith("  ")


def fail(msg):
    print(f"torch_baseline_check: {msg}", file=sys.stderr)
    return 1


def check_run(baseline):
    hidden, batch, steps, epochs, warmup = 32, 2, 20, 2, 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, baseline, "--device", "cpu", "--threads", "1", "--hidden-size", str(hidden),
               "--batch-size", str(batch), "--max-steps", str(steps), "--epochs", str(epochs),
               "--warmup", str(warmup), "--seed", "7", "--json", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return fail(f"exit {p.returncode}: {p.stderr.strip()[-400:]}")
        if len(p.stdout.strip().splitlines()) != 1:
            return fail(f"expected a one-line summary on stdout, got {p.stdout!r}")
        # torch may warn on stderr too (e.g. a wheel without numpy): count the progress lines only.
        progress = [line for line in p.stderr.splitlines() if line.startswith("epoch ")]
        if len(progress) != warmup + epochs:
            return fail(f"expected {warmup + epochs} progress lines on stderr, got {p.stderr!r}")
        with open(out) as f:
            r = json.load(f)
        # Bad flags: one line, exit 2, no JSON written.
        bad = os.path.join(tmp, "bad.json")
        for flags in (["--hidden-size", "0"], ["--warmup", "-1"], ["--epochs", "0"], ["--preset", "huge"],
                      ["--no-such-flag"], ["--lr", "nan"]):
            q = subprocess.run([sys.executable, baseline, "--device", "cpu", "--json", bad] + flags,
                               capture_output=True, text=True)
            own = [line for line in q.stderr.splitlines() if not torch_warning(line)]
            if q.returncode != 2 or len(own) != 1 or os.path.exists(bad):
                return fail(f"{flags}: want exit 2, one line, no file; got {q.returncode}, {q.stderr!r}")
    games = 17 * batch  # (screen width 20 - 3) groups
    errors = []
    for key in ("epochs_per_s", "epoch_s_median", "game_steps_per_s", "score", "loss", "device",
                "torch_version", "mode", "config", "warmup", "epochs", "epoch_s"):
        if key not in r:
            errors.append(f"missing field {key}")
    if errors:
        return fail("; ".join(errors))
    med = r["epoch_s_median"]
    if not (isinstance(med, float) and med > 0 and math.isfinite(med)):
        errors.append(f"epoch_s_median {med}")
        return fail("; ".join(errors))
    for key in ("epochs_per_s", "game_steps_per_s"):
        if not (isinstance(r[key], float) and r[key] > 0 and math.isfinite(r[key])):
            errors.append(f"{key} {r[key]} is not a positive finite rate")
    if len(r["epoch_s"]) != epochs:
        errors.append(f"{len(r['epoch_s'])} timed epochs, want {epochs}")
    elif not math.isclose(med, statistics.median(r["epoch_s"]), rel_tol=1e-9):
        errors.append(f"epoch_s_median {med} is not the median of {r['epoch_s']}")
    if not errors and not math.isclose(r["epochs_per_s"], 1.0 / med, rel_tol=1e-9):
        errors.append("epochs_per_s is not 1 / epoch_s_median")
    if not errors and not math.isclose(r["game_steps_per_s"], games * steps / med, rel_tol=1e-9):
        errors.append(f"game_steps_per_s is not {games} games x {steps} steps / epoch_s_median")
    if (r["warmup"], r["epochs"]) != (warmup, epochs):
        errors.append(f"warmup {r['warmup']}, epochs {r['epochs']}: want {warmup}, {epochs}")
    for key in ("score", "loss"):
        v = r[key]
        if len(v) != warmup + epochs or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in v):
            errors.append(f"{key} must be {warmup + epochs} finite numbers (warm-up included): {v}")
    # A score is caught - missed after `steps` steps: at most one fruit reaches the bottom per step
    # with the default spawn interval, so |score| <= steps.
    if any(abs(s) > steps for s in r["score"]):
        errors.append(f"score out of range: {r['score']}")
    c = r["config"]
    want = dict(hidden=hidden, batch=batch, steps=steps, games=games, lr=5e-4, seed=7, threads=1)
    for k, v in want.items():
        if c.get(k) != v:
            errors.append(f"config.{k} = {c.get(k)}, want {v}")
    if r["mode"] != "eager" or r["device_type"] != "cpu" or not r["device"]:
        errors.append(f"mode {r['mode']}, device {r['device_type']} {r['device']!r}")
    if errors:
        return fail("; ".join(errors))
    print(f"torch_baseline_check: run OK ({med:.4f} s/epoch, scores {r['score']})")
    return 0


def check_replay(baseline, grpo):
    spec = importlib.util.spec_from_file_location("torch_baseline", baseline)
    tb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tb)
    W, H, F = tb.SCREEN_W, tb.SCREEN_H, tb.MAX_FRUITS
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    n, steps = 96, 60
    # Random start states: fruits anywhere on (or just below) the screen, active or not, so that
    # catching, missing, leaving the screen, the spawn gate and the coin all occur.
    state = torch.zeros(n, tb.STATE_COLS, dtype=torch.int32)
    state[:, tb.SX] = torch.randint(0, W, (n,), generator=g, dtype=torch.int32)
    state[:, tb.FX] = torch.randint(0, W, (n, F), generator=g, dtype=torch.int32)
    state[:, tb.FY] = torch.randint(0, H + 2, (n, F), generator=g, dtype=torch.int32)
    state[:, tb.ACT] = torch.randint(0, 2, (n, F), generator=g, dtype=torch.int32)
    doc_steps, draws = [], []
    for _ in range(steps):
        action = torch.randint(0, 3, (n,), generator=g, dtype=torch.int32)
        coin = torch.rand(n, generator=g)
        coin[torch.rand(n, generator=g) < 0.05] = 0.5  # the strict u > 0.5 bound
        spawn_x = torch.randint(0, W, (n, F), generator=g, dtype=torch.int32)
        draws.append((action, coin, spawn_x))
        doc_steps.append(dict(actions=action.tolist(), coins=[float(u) for u in coin], spawn_x=spawn_x.tolist()))
    game = dict(screen_width=W, screen_height=H, sprite_width=tb.SPRITE_W, max_fruits=F,
                min_fruits=tb.MIN_FRUITS, min_interval_steps=tb.MIN_INTERVAL)
    doc = dict(game=game, observations=tb.observe(state).to(torch.int64).tolist(), steps=doc_steps)
    p = subprocess.run([grpo, "replay"], input=json.dumps(doc), capture_output=True, text=True)
    if p.returncode != 0:
        return fail(f"grpo replay exit {p.returncode}: {p.stderr.strip()[-400:]}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    if len(lines) != steps:
        return fail(f"grpo replay printed {len(lines)} steps, want {steps}")
    events = dict(bottomed=0, spawned=0)
    for t, ((action, coin, spawn_x), want) in enumerate(zip(draws, lines)):
        after = tb.game_step(state, action, coin, spawn_x)
        reward = tb.step_reward(t == 0, state[:, tb.SCORE], after)
        events["bottomed"] += int((after[:, tb.BOTTOMED] - state[:, tb.BOTTOMED]).sum())
        events["spawned"] += int(((after[:, tb.ACT] == 1) & (after[:, tb.FY] == 0)).sum())
        state = after
        got_obs = tb.observe(state).to(torch.int64).tolist()
        if got_obs != want["observations"]:
            bad = next(i for i in range(n) if got_obs[i] != want["observations"][i])
            return fail(f"step {t} game {bad}: observation {got_obs[bad]}, engine {want['observations'][bad]}")
        for key, col in (("score", tb.SCORE), ("bottomed", tb.BOTTOMED)):
            got = state[:, col].tolist()
            if got != want[key]:
                bad = next(i for i in range(n) if got[i] != want[key][i])
                return fail(f"step {t} game {bad}: {key} {got[bad]}, engine {want[key][bad]}")
        diff = (reward.double() - torch.tensor(want["reward"], dtype=torch.float64)).abs()
        if float(diff.max()) > 1e-6:
            i = int(diff.argmax())
            return fail(f"step {t} game {i}: reward {float(reward[i])}, engine {want['reward'][i]}")
    if events["bottomed"] == 0 or events["spawned"] == 0:
        return fail(f"the random input exercised too little: {events}")
    print(f"torch_baseline_check: replay OK ({n} games x {steps} steps match the engine; "
          f"{events['bottomed']} fruits bottomed, {events['spawned']} spawned)")
    return 0


def main(argv):
    if torch is None:
        other = interpreter_with_torch()
        if other is None:
            print(f"torch_baseline_check: neither {sys.executable} nor /usr/bin/python3 nor python3 on PATH "
                  "imports torch; skipped", file=sys.stderr)
            return 77
        return subprocess.run([other, os.path.abspath(__file__)] + argv).returncode
    if len(argv) == 2 and argv[0] == "run":
        return check_run(argv[1])
    if len(argv) == 3 and argv[0] == "replay":
        return check_replay(argv[1], argv[2])
    print("usage: torch_baseline_check.py run BASELINE | replay BASELINE GRPO", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
