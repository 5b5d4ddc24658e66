"""tools/profile_ncu's cases and its reading of Nsight Compute's raw CSV page.

Each case is a bench_epoch run and the kernels of it that issue 16 still has to decide on (the
rollout kernels, the loss pass's row-local kernels, AdamW); each kernel is profiled once, its third
launch, with the sections below and warm caches (ncu's --cache-control none: the rollout re-reads
its weights from L2 every step). A kernel launched once an epoch is caught in epoch 2's graph
replay; the stepwise rollout's kernels (launched every step) in the first epoch, which runs
eagerly (engine/cuda/executor_cuda.cpp), at step 2. The summary takes a handful of figures per
kernel from the raw page (one row per profiled kernel, a row of units under the header)."""
import csv
import glob
import io
import os
import re
import shutil

# bench_epoch flags common to every case: graph replay, a few epochs so that a steady launch exists.
EPOCHS = ["--executor", "graph", "--warmup", "2", "--repeats", "2"]
SKIP = 2  # launches of the kernel skipped before the profiled one

CASES = (
    ("small-bf16-cluster-mma", ["--preset", "small", "--precision", "bf16", "--cluster-rollout", "mma"],
     ("rollout_cluster_kernel", "head_loss_fused_kernel", "layernorm_input_onepass_kernel", "adamw_kernel")),
    ("small-fp32", ["--preset", "small"], ("rollout_step_kernel", "linear_forward_few_rows_kernel")),
    ("reference-bf16", ["--preset", "reference", "--precision", "bf16"],
     ("rollout_step_kernel", "head_loss_fused_kernel", "layernorm_input_onepass_kernel")),
)

# SourceCounters: the warp-state samples per SASS instruction (the source page, read_source).
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "WarpStateStats", "SourceCounters")

# (column title, raw metric, scale, format): the figures the summary shows.
FIGURES = (
    ("us", "gpu__time_duration.sum", 1e-3, "%.1f"),
    ("SM %", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1, "%.0f"),
    ("memory %", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1, "%.0f"),
    ("DRAM %", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 1, "%.0f"),
    ("L1 hit %", "l1tex__t_sector_hit_rate.pct", 1, "%.0f"),
    ("L2 hit %", "lts__t_sector_hit_rate.pct", 1, "%.0f"),
    ("occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1, "%.0f"),
    ("regs", "launch__registers_per_thread", 1, "%.0f"),
    ("grid", "launch__grid_size", 1, "%.0f"),
)
NOT_STALLS = ("selected", "not_selected")  # issuing, or eligible and passed over: not stalls
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
TIME_UNITS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}


def find_ncu():
    """NCU=PATH, else ncu on PATH, else the newest /opt/nvidia/nsight-compute/*/ncu."""
    found = os.environ.get("NCU") or shutil.which("ncu")
    if found:
        return found
    opt = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu") + glob.glob("/usr/local/cuda/bin/ncu"))
    return opt[-1] if opt else None


def ncu_args(ncu_bin, rep, kernel, bench, case_flags):
    """The ncu command that profiles one launch of `kernel` in a bench_epoch run into rep.ncu-rep."""
    argv = [ncu_bin, "--clock-control", "none", "--cache-control", "none", "--kernel-name", "regex:" + kernel, "--launch-skip", str(SKIP),
            "--launch-count", "1", "--print-units", "base", "--force-overwrite", "--export", rep]
    for s in SECTIONS:
        argv += ["--section", s]
    return argv + [bench] + case_flags + EPOCHS


def _number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def read_raw(text):
    """Rows of `ncu --import R --page raw --csv --print-units base`: a dict per profiled kernel
    from column name to value (numbers as floats, durations in ns). ValueError when the text is
    not that page."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        raise ValueError("no raw page (no 'Kernel Name' header)")
    header = rows[start]
    name = header.index("Kernel Name")
    # The row of units, when there is one, names no kernel.
    has_units = len(rows) > start + 1 and len(rows[start + 1]) == len(header) and rows[start + 1][name] == ""
    units = rows[start + 1] if has_units else [""] * len(header)
    out = []
    for r in rows[start + 1 + int(has_units):]:
        if len(r) != len(header):
            continue
        d = {}
        for name, unit, value in zip(header, units, r):
            v = _number(value)
            if v is not None and unit in TIME_UNITS:
                v *= TIME_UNITS[unit]
            d[name] = v if v is not None else value
        out.append(d)
    return out


def summary_row(case, kernel, raw):
    """The summary's figures for one profiled kernel (raw: a read_raw row), stall reasons last:
    the three largest, in warp cycles per issued instruction."""
    row = {"case": case, "kernel": kernel}
    for title, metric, scale, _ in FIGURES:
        names = metric if isinstance(metric, tuple) else (metric,)
        v = next((raw[m] for m in names if isinstance(raw.get(m), float)), None)
        row[title] = v * scale if isinstance(v, float) else None
    reasons = ((STALL.match(k), v) for k, v in raw.items() if isinstance(v, float))
    stalls = sorted(((v, m.group(1)) for m, v in reasons if m and m.group(1) not in NOT_STALLS), reverse=True)
    row["stalls"] = ", ".join("%s %.1f" % (name, v) for v, name in stalls[:3] if v > 0)
    return row


def markdown(rows):
    titles = [f[0] for f in FIGURES]
    lines = ["| case | kernel | " + " | ".join(titles) + " | top stalls (cycles per issue) |",
             "| --- | --- | " + " | ".join("---" for _ in titles) + " | --- |"]
    for r in rows:
        cells = [(fmt % r[t]) if r.get(t) is not None else "-" for t, _, _, fmt in FIGURES]
        lines.append("| %s | %s | %s | %s |" % (r["case"], r["kernel"], " | ".join(cells), r.get("stalls") or "-"))
    return "\n".join(lines) + "\n"


SAMPLES = "Warp Stall Sampling (All Samples)"
SAMPLE_REASON = re.compile(r"^stall_(\w+)$")  # the per-reason columns; "(Not Issued)" ones excluded


def read_source(text, top=3):
    """`ncu --import R --page source --csv --print-source sass`: where a kernel's warp-state
    samples fall. {"instructions", "samples", "executed" (warp instructions), "reasons": [(name,
    share of samples)] largest first, "hottest": [(index, SASS, share, largest reason)] top
    `top`}. ValueError when the text is not that page."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if SAMPLES in r and "Source" in r), None)
    if start is None:
        raise ValueError("no source page (no '%s' column)" % SAMPLES)
    header = rows[start]
    at = {h: i for i, h in enumerate(header)}
    reasons = [(h, m.group(1)) for h, m in ((h, SAMPLE_REASON.match(h)) for h in header) if m]
    executed = at.get("Instructions Executed")
    total, per_reason, per_row, count, warp_instructions = 0, {}, [], 0, 0
    for r in rows[start + 1:]:
        if len(r) != len(header):
            continue
        count += 1
        n = _number(r[at[SAMPLES]]) or 0.0
        total += n
        if executed is not None:
            warp_instructions += _number(r[executed]) or 0.0
        mine = {name: _number(r[at[h]]) or 0.0 for h, name in reasons}
        for name, v in mine.items():
            per_reason[name] = per_reason.get(name, 0.0) + v
        top_reason = max(mine.items(), key=lambda kv: kv[1])[0] if mine and max(mine.values()) > 0 else "-"
        per_row.append((n, count - 1, r[at["Source"]].strip(), top_reason))
    if count == 0:
        raise ValueError("the source page lists no instruction")
    share = (lambda v: v / total) if total else (lambda v: 0.0)
    hottest = sorted(per_row, key=lambda x: (-x[0], x[1]))[:top]
    return {"instructions": count, "samples": total, "executed": warp_instructions,
            "reasons": [(k, share(v)) for k, v in sorted(per_reason.items(), key=lambda kv: -kv[1]) if v > 0],
            "hottest": [(i, sass, share(n), why) for n, i, sass, why in hottest if n > 0]}


def source_markdown(rows):
    """One line per kernel whose source page was read: its largest stall reasons by share of the
    samples, and its hottest SASS instructions."""
    lines = ["| case | kernel | SASS instructions | warp instructions executed | stall samples by reason | "
             "hottest instructions (index: SASS, share, reason) |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        s = r.get("source")
        if not s:
            continue
        why = ", ".join("%s %.0f%%" % (k, 100 * v) for k, v in s["reasons"][:5])
        hot = "; ".join("%d: `%s` %.0f%% %s" % (i, sass.replace("|", "/"), 100 * v, reason)
                        for i, sass, v, reason in s["hottest"])
        lines.append("| %s | %s | %d | %.0f | %s | %s |" % (r["case"], r["kernel"], s["instructions"], s["executed"],
                                                          why or "-", hot or "-"))
    return "\n".join(lines) + "\n"
