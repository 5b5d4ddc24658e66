"""bench_epoch on the host executor at a tiny size (argv[1]: the program): the JSON holds what
tools/gpu_check reads from each row (both epoch figures, each the inverse of its seconds) and
echoes the configuration asked for. A contract test, not a timing: any positive time passes."""
import json
import math
import os
import subprocess
import sys
import tempfile

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "epoch.json")
    p = subprocess.run([sys.argv[1], "--executor", "host", "--hidden-size", "16", "--batch-size", "2",
                        "--max-steps", "8", "--warmup", "1", "--repeats", "4", "--gemm-n", "64", "--json", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=100)
    print(p.stdout)
    if p.returncode != 0:
        sys.exit("exit %d" % p.returncode)
    doc = json.load(open(path))
errors = []
if (doc["config"]["hidden"], doc["config"]["batch"], doc["config"]["steps"]) != (16, 2, 8):
    errors.append("config %s is not the one asked for" % doc["config"])
rows = doc["rows"]
if [r["executor"] for r in rows] != ["host"]:
    errors.append("rows %s: want the host's alone" % [r.get("executor") for r in rows])
for r in rows:
    for s, rate in (("epoch_s", "epochs_per_s"), ("epoch_s_pipelined", "epochs_per_s_pipelined")):
        if not (r[s] > 0 and math.isfinite(r[s]) and math.isclose(r[rate], 1 / r[s], rel_tol=1e-12)):
            errors.append("%s %s and %s %s" % (s, r[s], rate, r[rate]))
    if not math.isclose(r["game_steps_per_s"], doc["config"]["samples"] / r["epoch_s"], rel_tol=1e-12):
        errors.append("game_steps_per_s %s is not samples / epoch_s" % r["game_steps_per_s"])
if errors:
    sys.exit("FAILED: " + "; ".join(errors))
print("bench_epoch smoke: %d row, waited %.4f s and pipelined %.4f s an epoch" % (
    len(rows), rows[0]["epoch_s"], rows[0]["epoch_s_pipelined"]))
