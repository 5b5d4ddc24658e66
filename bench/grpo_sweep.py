#!/usr/bin/env python3
"""Learning sweep of `grpo train --algo grpo` on the host executor: configurations x seeds.

Usage:
  bench/grpo_sweep.py --grpo build/simt/grpo --out DIR [--jobs 2] [--seeds 1,2,3]
                      [--config NAME='FLAGS' ...] [--epochs 200]
  bench/grpo_sweep.py --summarize DIR [DIR ...] [--json OUT.json] [--plot OUT.png] [--highlight NAME]

Every run is `grpo train --preset small --backend host --algo grpo --patience 0 --seed S FLAGS`
into DIR/NAME/seed-S, one thread each (OMP_NUM_THREADS=1), --jobs at a time. A finished run
(a metrics file with --epochs lines) is not run again, so an interrupted sweep continues where
it stopped. The summary reads every DIR/*/seed-*/metrics.jsonl: per run the mean score over
epochs 180-199 (the issue's measure; fewer epochs: the last 20), the best epoch, wall time;
per configuration the median and range over seeds. --plot draws the score curves (trailing
10-epoch mean), one colour per configuration (matplotlib: Debian's python3-matplotlib).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

WINDOW = 20  # epochs 180-199 of a 200-epoch run


def read_scores(path):
    scores = []
    with open(path) as f:
        for line in f:
            try:
                scores.append(json.loads(line)["score"])
            except (json.JSONDecodeError, KeyError):
                pass
    return scores


def run_one(grpo, out, name, flags, seed, epochs):
    run_dir = os.path.join(out, name, f"seed-{seed}")
    metrics = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(metrics) and len(read_scores(metrics)) >= epochs:
        return run_dir, 0.0
    if os.path.exists(run_dir):
        subprocess.run(["rm", "-rf", run_dir], check=True)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    cmd = [grpo, "train", "--preset", "small", "--backend", "host", "--algo", "grpo", "--patience", "0",
           "--total-epochs", str(epochs), "--seed", str(seed), "--out", run_dir] + shlex.split(flags)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.time()
    with open(run_dir + ".log", "w") as log:
        r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    wall = time.time() - t0
    if r.returncode != 0:
        print(f"grpo_sweep: {name} seed {seed} exited {r.returncode}; see {run_dir}.log", file=sys.stderr)
    with open(os.path.join(run_dir, "sweep.json"), "w") as f:
        json.dump({"name": name, "flags": flags, "seed": seed, "wall_s": wall, "cmd": cmd}, f)
    print(f"grpo_sweep: {name} seed {seed} done in {wall:.0f} s", file=sys.stderr)
    return run_dir, wall


def summarize(dirs):
    runs = []
    for d in dirs:
        for name in sorted(os.listdir(d)):
            cdir = os.path.join(d, name)
            if not os.path.isdir(cdir):
                continue
            for sd in sorted(os.listdir(cdir)):
                metrics = os.path.join(cdir, sd, "metrics.jsonl")
                if not sd.startswith("seed-") or not os.path.exists(metrics):
                    continue
                s = read_scores(metrics)
                if not s:
                    continue
                meta_path = os.path.join(cdir, sd, "sweep.json")
                meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
                tail = s[-WINDOW:]
                runs.append({"config": name, "flags": meta.get("flags", ""), "seed": int(sd[5:]),
                             "epochs": len(s), "final_mean": sum(tail) / len(tail),
                             "best": max(s), "wall_s": meta.get("wall_s"), "scores": s})
    configs = {}
    for r in runs:
        configs.setdefault(r["config"], []).append(r)
    table = []
    for name, rs in configs.items():
        finals = sorted(r["final_mean"] for r in rs)
        table.append({"config": name, "flags": rs[0]["flags"], "seeds": [r["seed"] for r in rs],
                      "epochs": min(r["epochs"] for r in rs), "median_final": finals[len(finals) // 2],
                      "min_final": finals[0], "max_final": finals[-1]})
    return runs, table


def plot(runs, path, highlight=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 5))
    palette = plt.get_cmap("tab20").colors
    colours = {}
    for r in runs:
        mine = r["config"] == highlight
        c = "k" if mine else colours.setdefault(r["config"], palette[len(colours) % len(palette)])
        s = r["scores"]
        smooth = [sum(s[max(0, i - 9):i + 1]) / len(s[max(0, i - 9):i + 1]) for i in range(len(s))]
        label = r["config"] if sum(1 for x in runs[:runs.index(r)] if x["config"] == r["config"]) == 0 else None
        if mine and label:
            label += " (the defaults)"
        ax.plot(range(len(s)), smooth, color=c, lw=2.0 if mine else 1.0, label=label, zorder=3 if mine else 2)
    ax.axhline(11, color="k", ls="--", lw=0.8, label="heuristic level (+11)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("mean score (trailing 10 epochs)")
    ax.set_title("grpo train --algo grpo, small preset, host executor")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpo")
    ap.add_argument("--out")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--config", action="append", default=[], help="NAME='FLAGS' (repeatable)")
    ap.add_argument("--summarize", nargs="+")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    ap.add_argument("--highlight", help="configuration drawn in black, thicker (the defaults)")
    a = ap.parse_args()
    if a.summarize:
        runs, table = summarize(a.summarize)
        if not runs:
            print("grpo_sweep: no runs found", file=sys.stderr)
            return 2
        print("| config | flags | seeds | epochs | mean score, last 20 epochs: median (min..max) |")
        print("| --- | --- | --- | --- | --- |")
        for t in table:
            print(f"| {t['config']} | `{t['flags']}` | {','.join(map(str, t['seeds']))} | {t['epochs']} | "
                  f"{t['median_final']:+.1f} ({t['min_final']:+.1f}..{t['max_final']:+.1f}) |")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"runs": [{k: v for k, v in r.items() if k != "scores"} for r in runs], "configs": table},
                          f, indent=1)
        if a.plot:
            plot(runs, a.plot, a.highlight)
        return 0
    if not a.grpo or not a.out or not a.config:
        ap.error("--grpo, --out and at least one --config are needed (or --summarize)")
    configs = []
    for c in a.config:
        name, sep, flags = c.partition("=")
        if not sep or not name or "/" in name:
            ap.error(f"--config wants NAME='FLAGS', got {c!r}")
        configs.append((name, flags))
    seeds = [int(s) for s in a.seeds.split(",")]
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        jobs = [pool.submit(run_one, a.grpo, a.out, n, f, s, a.epochs) for n, f in configs for s in seeds]
        for j in jobs:
            j.result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
