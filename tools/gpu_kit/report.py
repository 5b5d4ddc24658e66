"""gpu-report.md (the summary table first) and gpu-report.json, and the logs as one archive,
so that the whole result is three files (a lent machine returns at most eight)."""
import json
import os
import subprocess
import tarfile


def _git(root, *args):
    try:
        return subprocess.run(["git", "-C", root] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cell(v):
    return str(v).replace("|", "\\|").replace("\n", " ")


def _fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


# bench_rollout_cuda's cluster kernel on tensor cores, and its variants' suffixes: each a question
# about its step (bench/README.md, "What the next lent GPU's figures decide").
MMA = "graph, cluster kernel, bf16 mma"
MMA_VARIANTS = (("with its mailboxes' waits spinning", ", spin waits"),
                ("at 119 games in 15 clusters (no SM runs two blocks)", ", 7 replicas"))


def document(kit):
    failed = [c["name"] for c in kit.checks if c["status"] == "fail"]
    return {
        "tool": "tools/gpu_check",
        "started": kit.started,
        "seconds": round(kit.elapsed(), 1),
        "quick": kit.quick,
        "dry_run": kit.dry_run,
        "commit": _git(kit.root, "rev-parse", "HEAD"),
        "tree_dirty": bool(_git(kit.root, "status", "--porcelain", "--untracked-files=no")),
        "device": dict({"name": kit.device.get("name", "none")}, **kit.device),
        "summary": {"passed": sum(c["status"] == "pass" for c in kit.checks), "failed": len(failed),
                    "not_run": sum(c["status"] == "not run" for c in kit.checks), "failed_checks": failed},
        "checks": kit.checks,
        "epochs_per_s": kit.data.get("epochs_per_s", {"small": None, "reference": None}),
        "torch_epochs_per_s": kit.data.get("torch_epochs_per_s", {"small": None, "reference": None}),
        **{k: v for k, v in kit.data.items() if k not in ("epochs_per_s", "torch_epochs_per_s")},
    }


def markdown(doc):
    d = doc["device"]
    s = doc["summary"]
    lines = ["# GPU check: %s" % d.get("name", "none"), "",
             "`tools/gpu_check%s%s` at commit %s%s, started %s, %.0f s. %d passed, %d failed, %d not run." % (
                 " --quick" if doc["quick"] else "", " --dry-run" if doc["dry_run"] else "", doc["commit"][:10],
                 " (uncommitted changes)" if doc["tree_dirty"] else "", doc["started"], doc["seconds"],
                 s["passed"], s["failed"], s["not_run"]), "",
             "| check | result | figure | s |", "| --- | --- | --- | --- |"]
    for c in doc["checks"]:
        status = "FAIL" if c["status"] == "fail" else c["status"]
        lines.append("| %s | %s | %s | %.0f |" % (_cell(c["name"]), status, _cell(c["figure"]), c["seconds"]))
    lines += ["", "## Device", ""] + ["- %s: %s" % (k, v) for k, v in d.items()]
    eps, teps, ratio = doc["epochs_per_s"], doc["torch_epochs_per_s"], doc.get("engine_over_torch", {})
    steps = doc.get("game_steps_per_s", {})
    eager, tf32 = doc.get("epochs_per_s_eager", {}), doc.get("epochs_per_s_tf32", {})
    bf16 = doc.get("epochs_per_s_bf16", {})
    grpo, loop = doc.get("epochs_per_s_grpo", {}), doc.get("epochs_per_s_loop", {})
    cluster, cluster_bf16 = doc.get("epochs_per_s_cluster", {}), doc.get("epochs_per_s_cluster_bf16", {})
    cluster_mma = doc.get("epochs_per_s_cluster_mma", {})
    lines += ["", "## Epochs per second (training included)", "",
              "| preset | engine graph | engine eager | engine graph TF32 | engine graph BF16 | "
              "engine graph, rollout as a WHILE loop | engine graph, cluster rollout (fp32 / BF16 / BF16 mma) | "
              "engine graph `--algo grpo` | game steps/s (graph) | PyTorch best | engine / PyTorch |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in ("small", "reference"):
        lines.append("| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s |" % (
            p, _fmt(eps.get(p)), _fmt(eager.get(p)), _fmt(tf32.get(p)), _fmt(bf16.get(p)), _fmt(loop.get(p)),
            _fmt(cluster.get(p)), _fmt(cluster_bf16.get(p)), _fmt(cluster_mma.get(p)), _fmt(grpo.get(p)), _fmt(steps.get(p), "%.3g"),
            _fmt(teps.get(p)), _fmt(ratio.get(p), "%.2fx")))
    if doc.get("goals"):
        lines += ["", "Issue 16's goals, the fastest allowed variant against each: " + "; ".join(
            "%s %.1f epochs/s (%s) of %.0f" % (p, g["epochs_per_s"], g["variant"], g["goal"])
            for p, g in doc["goals"].items()) + "."]
    pipelined = doc.get("epochs_per_s_pipelined_by_variant", {})
    if any(pipelined.values()):
        lines += ["", "The same epochs pipelined, the next one queued before each wait as `grpo train` runs them "
                  "(each figure above waits for its epoch): " + "; ".join(
                      "%s: %s" % (p, ", ".join("%s %s" % (label, _fmt(e)) for label, e in got.items()))
                      for p, got in pipelined.items() if got) + "."]
    roll = {p: rows for p, rows in (doc.get("rollout_us_per_step") or {}).items() if rows}
    if roll:
        presets = list(roll)
        modes = list(dict.fromkeys(m for rows in roll.values() for m in rows))
        lines += ["", "## The rollout alone, microseconds per game step (bench_rollout_cuda)", "",
                  "| mode | " + " | ".join(presets) + " |", "| --- |" + " --- |" * len(presets)]
        lines += ["| %s | %s |" % (m, " | ".join(_fmt(roll[p].get(m), "%.2f") for p in presets)) for m in modes]
        small = roll.get("small") or {}
        base = small.get(MMA)
        versus = [(label, small.get(MMA + suffix)) for label, suffix in MMA_VARIANTS]
        versus = [(label, us) for label, us in versus if base and us is not None]
        if versus:
            lines += ["", "Against the small preset's cluster kernel on tensor cores (%.2f us a step): %s "
                      "(below 1: faster; bench/README.md says what each decides)." % (
                          base, ", ".join("%s %.2fx" % (label, us / base) for label, us in versus))]
    for p, modes in (doc.get("rollout_phases") or {}).items():
        for mode, ph in modes.items():
            whose = ph.get("whose", "the first cluster's")
            launch = "" if whose == "the first cluster's" else (
                " The fused step's phases end with its launch, which begins under the product before it: a share "
                "is of the launch, the a1 wait is the product's part of it.")
            lines += ["", "### Where a step of the %s rollout goes: %s (phase clocks)" % (p, mode), "",
                      "Warp 0 of %s %d blocks, SM cycles a phase, medians over %d steps; us: the "
                      "share of the step (by the blocks' medians) of its %.2f us above.%s" % (
                          whose, ph["blocks"], ph["steps"], (roll.get(p) or {}).get(mode) or 0.0, launch), "",
                      "| phase | cycles, block 0 | median of the blocks | largest of the blocks | share | us |",
                      "| --- | --- | --- | --- | --- | --- |"]
            lines += ["| %s | %.0f | %.0f | %.0f | %.1f%% | %.2f |" % (
                _cell(r["phase"]), r["cycles_block0"], r["cycles_median"], r["cycles_max"], 100 * r["share"], r["us"])
                for r in ph["rows"]]
            lines.append("| step | - | %.0f | - | 100%% | %.0f cycles at %.0f MHz: %.2f us |" % (
                ph["step_cycles"], ph["step_cycles"], ph["sm_clock_mhz"],
                ph["step_cycles"] / ph["sm_clock_mhz"] if ph["sm_clock_mhz"] else 0.0))
            where = ph.get("placement")
            if where:
                lines += ["", "Where the blocks ran (global timer): %d blocks on %d SMs, %d of them running two "
                          "blocks at once." % (where["blocks"], where["sms"], where["shared_sms"])]
                for label, g in (("alone on their SMs", where["alone"]), ("sharing an SM", where["sharing"])):
                    if g["clusters"]:
                        lines.append("- %d clusters %s: %.2f us a step (median; %.2f-%.2f)." % (
                            g["clusters"], label, g["us_median"], g["us_min"], g["us_max"]))
                if where["alone"]["clusters"] and where["sharing"]["clusters"] and where["alone"]["us_median"]:
                    lines.append("- The sharing clusters' step over the others': %.2fx." % (
                        where["sharing"]["us_median"] / where["alone"]["us_median"]))
    k = doc.get("kernels")
    if k:
        lines += ["", "## Kernels (events, L2 flushed, median)", "",
                  "Ceilings measured in the same run: device copy %.0f GB/s, cuBLAS sgemm %.0f GFLOP/s." % (
                      k["copy_gbps"] or 0, k["sgemm_gflops"] or 0), "",
                  "| op | case | us/call | rate | fraction of ceiling |", "| --- | --- | --- | --- | --- |"]
        for r in k["rows"]:
            lines.append("| %s | %s | %.1f | %.0f %s | %.0f%% |" % (r["op"], r["case"], r["us"], r["rate"], r["unit"],
                                                                  100 * r["fraction"]))
    algos = doc.get("gemm_algos")
    if algos:
        lines += ["", "## cuBLASLt's heuristic answers per product (events, L2 flushed, median; rank 0 is the "
                  "engine's)", "", "| precision | op | case | rows x H | rank 0 us | best us | best rank | gain | "
                  "TFLOP/s (best) | best's algorithm: id, tile, K splits | rank 0 with K split: us (splits) |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in algos:
            a = r["answers"][r["best_rank"]]
            taken = [x for x in r.get("splits", []) if x["us"] is not None]
            split = "; ".join("%.1f (%d)" % (x["us"], x["split"]) for x in taken) or "-"
            lines.append("| %s | %s | %s | %dx%d | %.1f | %.1f | %d | %.2fx | %.0f | %s, %s, %s | %s |" % (
                r["precision"], r["op"], r["case"], r["M"], r["H"], r["first_us"], r["best_us"], r["best_rank"],
                r["first_us"] / r["best_us"] if r["best_us"] else 1.0, r["tflops_best"], a["algo_id"],
                a.get("tile_id"), a.get("split_k"), split))
    for p, rows in (doc.get("cuda_breakdown") or {}).items():
        total = sum(r["s"] for r in rows) or 1.0
        lines += ["", "## Where an eager %s epoch goes (events around each op, launch waits included)" % p, "",
                  "| phase/op | ms per epoch | calls | share |", "| --- | --- | --- | --- |"]
        lines += ["| %s | %.3f | %d | %.1f%% |" % (_cell(r["op"]), 1e3 * r["s"], r["calls"], 100 * r["s"] / total)
                  for r in rows[:15]]
    if doc.get("graph_nodes"):
        kinds, edges = doc.get("graph_node_kinds", {}), doc.get("graph_edges", {})
        lines += ["", "## Graph nodes per epoch", ""]
        lines += ["- %s: %d%s%s" % (case, n, " (%s)" % kinds[case] if case in kinds else "",
                                   "; %d edges, %d from a kernel to a kernel, %d of those programmatic" %
                                   tuple(edges[case]) if case in edges else "")
                  for case, n in doc["graph_nodes"].items()]
    if doc.get("peak_gpu_memory_mib"):
        lines += ["", "## Peak GPU memory while timing (nvidia-smi, whole GPU)", ""]
        lines += ["- %s: %d MiB" % kv for kv in doc["peak_gpu_memory_mib"].items()]
    details = [c for c in doc["checks"] if c.get("detail")]
    if details:
        lines += ["", "## Failure details", ""]
        for c in details:
            lines += ["- %s:" % c["name"]] + ["  - %s" % x for x in c["detail"]]
    lines += ["", "Logs: gpu-logs.tar.gz beside this file (one log per command, named in the JSON's checks)."]
    return "\n".join(lines) + "\n"


def write(kit):
    doc = document(kit)
    os.makedirs(kit.out, exist_ok=True)
    with open(os.path.join(kit.out, "gpu-report.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    with open(os.path.join(kit.out, "gpu-report.md"), "w") as f:
        f.write(markdown(doc))
    with tarfile.open(os.path.join(kit.out, "gpu-logs.tar.gz"), "w:gz") as t:
        t.add(kit.run.logs, arcname="logs")
    return doc
