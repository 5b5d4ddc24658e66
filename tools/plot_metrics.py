#!/usr/bin/env python3
"""Score, reward and loss curves of a grpo.cu run, from its metrics file to a PNG.

Usage: /usr/bin/python3 tools/plot_metrics.py RUN/metrics.jsonl [-o curves.png] [--smooth N]
Needs matplotlib (Debian: apt-get install python3-matplotlib; /usr/bin/python3 is Debian's python).
Each line of the metrics file is one epoch's JSON object (epoch, score, best_score, reward, loss,
...); null values (non-finite metrics) are skipped. --smooth N adds a trailing N-epoch mean.
"""
import argparse
import json
import os
import sys


def read_metrics(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"plot_metrics: {path}:{n}: not JSON, skipped", file=sys.stderr)
    return rows


def series(rows, key):
    xs, ys = [], []
    for r in rows:
        if r.get(key) is not None and r.get("epoch") is not None:
            xs.append(r["epoch"])
            ys.append(r[key])
    return xs, ys


def trailing_mean(ys, n):
    out, acc = [], 0.0
    for i, y in enumerate(ys):
        acc += y
        if i >= n:
            acc -= ys[i - n]
        out.append(acc / min(i + 1, n))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", help="metrics.jsonl written by grpo train")
    ap.add_argument("-o", "--output", help="PNG to write (default: next to the metrics, curves.png)")
    ap.add_argument("--smooth", type=int, default=0, help="also draw a trailing mean over N epochs")
    args = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_metrics: matplotlib is missing (apt-get install python3-matplotlib, then run with /usr/bin/python3)",
              file=sys.stderr)
        return 2
    rows = read_metrics(args.metrics)
    if not rows:
        print(f"plot_metrics: {args.metrics} holds no epochs", file=sys.stderr)
        return 2
    output = args.output or os.path.join(os.path.dirname(args.metrics) or ".", "curves.png")

    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for ax, key, title in zip(axes, ("score", "reward", "loss"),
                              ("score (mean final score over games)", "reward (mean last-step reward)", "loss")):
        xs, ys = series(rows, key)
        ax.plot(xs, ys, lw=0.8, alpha=0.5 if args.smooth > 1 else 1.0, label=key)
        if args.smooth > 1 and ys:
            ax.plot(xs, trailing_mean(ys, args.smooth), lw=1.5, label=f"{key}, mean of {args.smooth}")
        if key == "score":
            bx, by = series(rows, "best_score")
            ax.plot(bx, by, lw=1.0, ls="--", label="best score")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    axes[-1].set_xlabel("epoch")
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print(f"plot_metrics: wrote {output} ({len(rows)} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
