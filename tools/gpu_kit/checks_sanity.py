"""Correctness on the real GPU: compute-sanitizer over the kernel tests and short training runs,
graph replay against eager launches bit for bit, and the CUDA executor against the host one."""
import math
import os

from . import kit as kitmod
from . import parse

TOOLS = ["memcheck", "racecheck", "synccheck", "initcheck"]


def _train(kit, tag, extra, epochs, prefix=(), timeout=120, config=kitmod.TINY):
    """grpo train with `config` for `epochs` epochs into a fresh folder; returns (Result, dir)."""
    out = kit.tmp("train-" + tag)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    argv = list(prefix) + [kit.bin("grpo"), "train", "--total-epochs", str(epochs), "--out", out] + config + extra
    return kit.run.run("train-" + tag, argv, timeout), out


def _train_pair(kit, name, runs, epochs, config=kitmod.TINY):
    """Two grpo train runs [(tag, extra flags), (tag, extra flags)] on `config`: (the two output
    folders, seconds) when both ran and exited 0; else None, with the check recorded as not run or
    failed."""
    (ta, xa), (tb, xb) = runs
    a, adir = _train(kit, ta, xa, epochs, config=config)
    b, bdir = _train(kit, tb, xb, epochs, config=config)
    if a is None or b is None:
        kit.not_run(name, kit.run.why_not)
        return None
    if not (a.ok and b.ok):
        why = "a run failed (%s exit %d, %s exit %d)" % (ta, a.rc, tb, b.rc)
        kit.record(name, "fail", why, a.seconds + b.seconds, a.log + ", " + b.log)
        return None
    return adir, bdir, a.seconds + b.seconds


def sanitizers(kit):
    """Each tool over test_kernels_cuda, over the cluster rollout's tests (the one kernel with
    thread-block clusters and distributed shared memory, which no training run below takes) and
    over a 3-epoch grpo train, eager and graph (the graph run captures after its eager epoch 0,
    so both launch paths are covered). racecheck cannot check kernels that a graph's WHILE node
    runs (kit.SHORT_NO_LOOP): its train runs play 272 games, whose graph holds none, and over the
    cluster tests it instruments the cluster kernel alone (the tests also capture the stepwise
    rollout, whose graph holds one)."""
    tools = ["memcheck"] if kit.quick else TOOLS
    if kit.quick:
        kit.not_run("compute-sanitizer racecheck, synccheck, initcheck", "--quick")
    if not kit.have("grpo", "test_kernels_cuda"):
        for t in tools:
            kit.not_run("compute-sanitizer " + t, "the build failed")
        return
    table = {}
    for t in tools:
        cs = ["compute-sanitizer", "--tool", t, "--print-limit", "20"]
        if t == "racecheck":
            cs += ["--racecheck-report", "all"]
        counts, logs, status, seconds = {}, [], "pass", 0.0
        race = t == "racecheck"
        runs = [("kernel-tests", cs + [kit.bin("test_kernels_cuda"), "--gtest_brief=1"], None)]
        if kit.have("test_engine_cuda"):
            only = ["--kernel-name", "kns=rollout_cluster_kernel"] if race else []
            runs.append(("cluster-tests", cs + only + [kit.bin("test_engine_cuda"), "--gtest_brief=1",
                                                       # the repeats look for what timing decides:
                                                       # a sanitizer's timing is its own
                                                       "--gtest_filter=RolloutClusterCuda.*"
                                                       ":-RolloutClusterCuda.RepeatedLaunches*"], None))
        else:  # the other runs still go
            counts["cluster-tests"], status = "not built", "not run"
        runs += [("train-eager", None, ["--backend", "cuda", "--no-graph"]),
                 ("train-graph", None, ["--backend", "cuda"])]
        for what, argv, extra in runs:
            if argv is not None:
                res = kit.run.run("%s-%s" % (t, what), argv, 240)
            else:
                res, _ = _train(kit, "%s-%s" % (t, what), extra, 3, prefix=cs, timeout=240,
                                config=kitmod.SHORT_NO_LOOP if race else kitmod.SHORT)
            if res is None:
                status = "not run"
                continue
            seconds += res.seconds
            logs.append(res.log)
            try:
                errors, warnings = parse.sanitizer_errors(res.out)
                counts[what] = errors
                if errors or not res.ok:
                    status = "fail"
            except ValueError:
                counts[what] = "no summary (%s)" % ("timed out" if res.timed_out else "exit %d" % res.rc)
                status = "fail"
        table[t] = counts
        figure = ", ".join("%s %s" % (k, v) for k, v in counts.items()) + (" errors" if counts else kit.run.why_not)
        kit.record("compute-sanitizer " + t, status, figure, seconds, ", ".join(logs) or None)
    kit.data["sanitizer_errors"] = table


def graph_equals_eager(kit):
    """Five epochs captured and replayed against five eager ones: every tensor of the final
    checkpoint and every epoch's metrics equal bit for bit."""
    name = "graph replay == eager (5 epochs, bit for bit)"
    if not kit.have("grpo"):
        return kit.not_run(name, "the build failed")
    pair = _train_pair(kit, name, [("graph", ["--backend", "cuda"]), ("eager", ["--backend", "cuda", "--no-graph"])], 5)
    if pair is None:
        return False
    gdir, edir, seconds = pair
    try:
        tg = parse.safetensors_tensors(os.path.join(gdir, "final.safetensors"))
        te = parse.safetensors_tensors(os.path.join(edir, "final.safetensors"))
        mg = parse.metrics(os.path.join(gdir, "metrics.jsonl"))
        me = parse.metrics(os.path.join(edir, "metrics.jsonl"))
    except (OSError, ValueError, KeyError) as ex:
        return kit.record(name, "fail", "unreadable output: %s" % ex, seconds)
    differ = sorted(k for k in tg if tg[k] != te.get(k)) + sorted(set(te) - set(tg))
    keys = ("score", "loss", "grad_norm", "reward")
    mdiff = [r["epoch"] for r, s in zip(mg, me) if any(r.get(k) != s.get(k) for k in keys)]
    if differ or mdiff or len(mg) != len(me):
        return kit.record(name, "fail", "tensors differ: %s; epochs whose metrics differ: %s" % (differ, mdiff),
                          seconds)
    return kit.record(name, "pass", "%d tensors and %d epochs identical" % (len(tg), len(mg)), seconds)


# Per-epoch tolerances against the host executor (docs/design.md, "Tolerances"): fp32 products
# differ from OpenBLAS's only in summation order, so the sampled actions, and hence the scores,
# are the same; TF32's ~1e-3 product error may flip a rare action near a sampling boundary.
# bf16 runs the host executor at bf16 too (its twins take the same bf16 operands), so the sums
# differ only in order, but an h1 or da1 within fp32 rounding of a bf16 midpoint may round the
# other way, which may flip a rare action.
TOL = {"fp32": {"loss": (1e-4, 1e-3), "grad_norm": (0.0, 1e-3), "score": 0.0},
       "tf32": {"loss": (1e-3, 2e-2), "grad_norm": (0.0, 2e-2), "score": 1.0},
       "bf16": {"loss": (1e-4, 1e-3), "grad_norm": (0.0, 1e-3), "score": 1.0}}


def cuda_matches_host(kit, precision):
    name = "cuda executor == host executor (3 epochs%s)" % ("" if precision == "fp32" else ", " + precision.upper())
    if not kit.have("grpo"):
        return kit.not_run(name, "the build failed")
    tag = "" if precision == "fp32" else "-" + precision
    host_precision = ["--precision", "bf16"] if precision == "bf16" else []
    pair = _train_pair(kit, name, [("host" + tag, ["--backend", "host"] + host_precision),
                                   ("cuda" + tag, ["--backend", "cuda", "--precision", precision])], 3)
    if pair is None:
        return False
    hdir, ddir, seconds = pair
    try:
        mh = parse.metrics(os.path.join(hdir, "metrics.jsonl"))
        md = parse.metrics(os.path.join(ddir, "metrics.jsonl"))
    except (OSError, ValueError) as ex:
        return kit.record(name, "fail", "unreadable metrics: %s" % ex, seconds)
    tol, worst, bad, parted = TOL[precision], {"loss": 0.0, "grad_norm": 0.0, "score": 0.0}, [], None
    if len(mh) != 3 or len(md) != 3:
        bad.append("epochs: host %d, cuda %d" % (len(mh), len(md)))
    for a, b in zip(mh, md):
        # Where a flipped action is allowed (a score or reward that differs), the two runs play
        # other games from then on: their losses are no longer the same quantity.
        if parted is None and tol["score"] > 0 and (a["score"] != b["score"] or a.get("reward") != b.get("reward")):
            parted = a["epoch"]
        for k in ("loss", "grad_norm"):
            if parted is not None:
                break
            ref, got = float(a[k]), float(b[k])
            err = abs(got - ref)
            worst[k] = max(worst[k], err / max(abs(ref), 1e-30))
            if not (err <= tol[k][0] + tol[k][1] * abs(ref)) or math.isnan(got):
                bad.append("epoch %d %s %.9g vs host %.9g" % (a["epoch"], k, got, ref))
        ds = abs(float(a["score"]) - float(b["score"]))
        worst["score"] = max(worst["score"], ds)
        if ds > tol["score"]:
            bad.append("epoch %d score %s vs host %s" % (a["epoch"], b["score"], a["score"]))
    figure = "max rel diff loss %.2e, grad norm %.2e; max score diff %.3g" % (worst["loss"], worst["grad_norm"],
                                                                               worst["score"])
    if parted is not None:
        figure += "; an action flipped in epoch %d, losses compared before it" % parted
    kit.data.setdefault("host_parity", {})[precision] = worst
    return kit.record(name, "fail" if bad else "pass", figure, seconds, detail=bad or None)


# Does a run learn at each precision? The small preset from scratch, graph mode: the mean score of
# the last LEARN_TAIL epochs must beat the first LEARN_HEAD epochs' by LEARN_GAIN. The host
# executor, on the same flags and seed, went from -20.8 (first 10 epochs) to -4.4 (last 50), so
# half that gain leaves room for another trajectory; fp32 and bf16 are two different runs, so
# their difference is a figure, not a criterion.
LEARN_EPOCHS, LEARN_HEAD, LEARN_TAIL, LEARN_GAIN = 300, 10, 50, 8.0


def learning(kit):
    name = "learning: small preset, %d epochs, fp32 and BF16" % LEARN_EPOCHS
    if not kit.have("grpo"):
        return kit.not_run(name, "the build failed")
    base = ["--preset", "small", "--backend", "cuda", "--patience", "0", "--seed", "7"]
    # The preset alone: TINY's flags would override its widths and lengths.
    pair = _train_pair(kit, name, [("learn-fp32", base), ("learn-bf16", base + ["--precision", "bf16"])],
                       LEARN_EPOCHS, config=[])
    if pair is None:
        return False
    figures, bad = {}, []
    for tag, d in zip(("fp32", "bf16"), pair[:2]):
        try:
            m = parse.metrics(os.path.join(d, "metrics.jsonl"))
        except (OSError, ValueError) as ex:
            return kit.record(name, "fail", "unreadable metrics: %s" % ex, pair[2])
        if len(m) != LEARN_EPOCHS:
            bad.append("%s ran %d epochs" % (tag, len(m)))
            continue
        head = sum(float(r["score"]) for r in m[:LEARN_HEAD]) / LEARN_HEAD
        tail = sum(float(r["score"]) for r in m[-LEARN_TAIL:]) / LEARN_TAIL
        try:
            rate = parse.steady_epochs_per_s(m, LEARN_HEAD)
        except (KeyError, ValueError):
            rate = None  # a figure beside the verdict, which is the scores
        figures[tag] = {"first": head, "last": tail, "train_epochs_per_s": rate}
        if not tail >= head + LEARN_GAIN:
            bad.append("%s: first %d epochs %.2f, last %d %.2f" % (tag, LEARN_HEAD, head, LEARN_TAIL, tail))
    kit.data["learning"] = figures
    # The trainer's own rate (grpo train, pipelined, host work included) beside bench_epoch's
    # (each epoch waited for): the figure a user of the small preset sees.
    figure = "; ".join("%s %.2f -> %.2f (%s epochs/s in grpo train)" % (
        t, f["first"], f["last"], "%.0f" % f["train_epochs_per_s"] if f["train_epochs_per_s"] else "-")
        for t, f in figures.items())
    return kit.record(name, "fail" if bad else "pass", figure or "no figures", pair[2], detail=bad or None)
