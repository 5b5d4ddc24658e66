"""bench_gemm_algos_cuda on the emulator (argv[1]: the program): every product at every
precision runs with each rank the emulator's heuristic offers (it models four algorithms, each
rank naming another); the ranks asked past them are left out, not failed; rank 0's answer runs
with K in 2 and 301 splits: the emulator takes 2 and refuses 301 (K is 40, or 300 for the
weight's product); the JSON holds one row per product."""
import json
import os
import subprocess
import sys
import tempfile

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "algos.json")
    p = subprocess.run([sys.argv[1], "--ranks", "6", "--splits", "2,301", "--json", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=100)
    print(p.stdout)
    if p.returncode != 0:
        sys.exit("exit %d" % p.returncode)
    rows = json.load(open(path))["rows"]
wanted = {(prec, op) for prec in ("fp32", "tf32", "bf16") for op in ("forward", "backward_input", "backward_weight")}
got = {(r["precision"], r["op"]) for r in rows}
# Four answers a product, each timed (0 on the emulator) and each one of the model's four algorithms.
bad = [r for r in rows if len(r["answers"]) != 4 or not 0 <= r["best_rank"] < 4
       or any(a["us"] is None for a in r["answers"]) or {a["algo_id"] for a in r["answers"]} != {0, 1, 2, 3}
       or [(x["split"], x["us"] is not None) for x in r["splits"]] != [(2, True), (301, False)]]
if len(rows) != len(wanted) or got != wanted or bad:
    sys.exit("FAILED: %d rows, products %s, rows without four ranks or the splits' answers: %s" % (
        len(rows), sorted(got), bad))
print("bench_gemm_algos_cuda smoke: %d products, four ranks and two splits each" % len(rows))
