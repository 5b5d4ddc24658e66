"""Parsers for what the kit's steps print: compute-sanitizer summaries, ctest's JUnit file,
`grpo info --graph`, nvidia-smi queries, metrics.jsonl and safetensors tensor bytes.
Each returns plain values and raises ValueError when the text is not what it expects, so a
changed tool output fails the check loudly instead of passing silently."""
import json
import re
import struct
import xml.etree.ElementTree as ET

_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def sanitizer_errors(text):
    """(errors, warnings) of one compute-sanitizer run: the sum over its summary lines (one per
    process it followed). racecheck's own summary counts the hazards classed as errors and
    warnings; when it is present, an ERROR SUMMARY line beside it is not counted again. Raises
    ValueError when no summary line is found (the tool did not run to the end)."""
    races = list(_RACE_SUMMARY.finditer(text))
    if races:
        return sum(int(m.group(2)) for m in races), sum(int(m.group(3)) for m in races)
    found = list(_ERROR_SUMMARY.finditer(text))
    if not found:
        raise ValueError("no compute-sanitizer summary line")
    return sum(int(m.group(1)) for m in found), 0


_DIAGNOSTIC = re.compile(r"^(\S+?(?::\d+(?::\d+)?:|\(\d+\):) (?:fatal )?(?:error|warning)\b.*"
                         r"|ptxas (?:fatal|error|warning).*)$", re.M)


def diagnostics(text):
    """The compiler's error and warning lines in a build log, each once, in order of first
    appearance: g++'s `file:line:col: error: ...`, nvcc's `file(line): warning #...` and
    ptxas's own lines."""
    seen = []
    for m in _DIAGNOSTIC.finditer(text):
        line = m.group(1).strip()
        if line not in seen:
            seen.append(line)
    return seen


def junit_counts(path):
    """(passed, failed, skipped, names of failed or skipped tests) from ctest --output-junit."""
    root = ET.parse(path).getroot()
    passed = failed = skipped = 0
    bad = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
            bad.append("FAILED " + name)
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
            bad.append("SKIPPED " + name)
        else:
            passed += 1
    return passed, failed, skipped, bad


_NODES = re.compile(r"^graph nodes\s+(\d+)", re.M)


def graph_nodes(text):
    m = _NODES.search(text)
    if not m:
        raise ValueError("no 'graph nodes N' line in grpo info --graph output")
    return int(m.group(1))


_KINDS = re.compile(r"^graph node kinds\s+(.+?)\s*$", re.M)


def graph_node_kinds(text):
    """The text of grpo info --graph's 'graph node kinds' line, or None where it printed none (a
    build from before it did)."""
    m = _KINDS.search(text)
    return m.group(1) if m else None


_EDGES = re.compile(r"^graph edges\s+(\d+), (\d+) from a kernel to a kernel, (\d+) programmatic", re.M)


def graph_edges(text):
    """grpo info --graph's 'graph edges' line as (edges, kernel to kernel, programmatic), or None
    where it printed none (a build from before it did)."""
    m = _EDGES.search(text)
    return tuple(int(x) for x in m.groups()) if m else None


def csv_row(text):
    """The first line of `nvidia-smi --format=csv,noheader,nounits` as stripped fields."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if not line:
        raise ValueError("empty nvidia-smi answer")
    return [f.strip() for f in line.split(",")]


def number(field):
    """An nvidia-smi figure as an int, or None where it says it has none ("[N/A]", under MIG or in
    some VMs): a device fact missing is no reason to stop the kit."""
    try:
        return int(float(field))
    except ValueError:
        return None


def metrics(path):
    """metrics.jsonl as a list of dicts, in epoch order."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    if not rows:
        raise ValueError(path + " holds no epoch")
    return sorted(rows, key=lambda r: r["epoch"])


def steady_epochs_per_s(rows, skip):
    """grpo train's own rate past its first `skip` epochs (the eager epoch, the graph's capture):
    1 / the median of metrics.jsonl's epoch_seconds, the wall time between two epochs' metrics as
    the trainer's loop consumed them (one epoch queued behind the running one, the JSON line and
    the checkpoint decisions included)."""
    gaps = sorted(float(r["epoch_seconds"]) for r in rows[skip:])
    if not gaps:
        raise ValueError("no epoch past the first %d" % skip)
    n = len(gaps)
    mid = gaps[n // 2] if n % 2 else 0.5 * (gaps[n // 2 - 1] + gaps[n // 2])
    if mid <= 0:
        raise ValueError("a median epoch of %g s" % mid)
    return 1.0 / mid


def safetensors_tensors(path):
    """{name: raw bytes} of every tensor in a safetensors file (the metadata is left out)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(path + ": too short for safetensors")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = data[a:b]
    return out
