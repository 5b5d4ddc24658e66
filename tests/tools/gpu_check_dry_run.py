"""tools/gpu_check --dry-run OUT: exits 0, prints every step, runs the build and finds every
program the GPU steps call, and writes a report whose GPU checks all say 'not run' (never a
pass without a GPU). Exit 77 (skip) when the gpu flavour has not been built here."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = os.path.abspath(sys.argv[1])

if not os.path.exists(os.path.join(ROOT, "build", "gpu", "CMakeCache.txt")):
    print("SKIPPED: build/gpu is not configured (tools/test builds it unless GRPO_SKIP_GPU_BUILD=1)")
    sys.exit(77)

for name in ("gpu-report.json", "gpu-report.md", "gpu-logs.tar.gz"):
    try:
        os.remove(os.path.join(out, name))
    except FileNotFoundError:
        pass
env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_check"), "--dry-run", "--out", out],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=540)
print(p.stdout)
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


expect(p.returncode == 0, "exit code %d, wanted 0" % p.returncode)
doc = json.load(open(os.path.join(out, "gpu-report.json")))
md = open(os.path.join(out, "gpu-report.md")).read()
expect(os.path.getsize(os.path.join(out, "gpu-logs.tar.gz")) > 0, "empty log archive")
expect(doc["dry_run"] is True, "dry_run flag")
expect(doc["device"]["name"] == "none", "a device name without a GPU: %r" % doc["device"]["name"])
for key in ("epochs_per_s", "torch_epochs_per_s"):
    expect(set(doc[key]) == {"small", "reference"}, key + " keys")
    expect(all(v is None for v in doc[key].values()), key + " holds figures without a GPU")
checks = {c["name"]: c for c in doc["checks"]}
for c in doc["checks"]:
    expect(set(c) >= {"name", "status", "figure", "seconds"}, "fields of check " + c["name"])
    expect(c["status"] in ("pass", "not run"), "%s: %s in a dry run" % (c["name"], c["status"]))
build = [n for n in checks if n.startswith("build")]
expect(len(build) == 1 and checks[build[0]]["status"] == "pass", "the build step ran and passed")
expect(checks.get("programs present", {}).get("status") == "pass", "every program the GPU steps call exists")
passed = [n for n, c in checks.items() if c["status"] == "pass"]
expect(sorted(passed) == sorted(build + ["programs present"]),
       "only the build and the program check may pass without a GPU, got %s" % passed)
wanted = ["device", "cuda tests on the GPU", "graph replay == eager (5 epochs, bit for bit)",
          "cuda executor == host executor (3 epochs)", "cuda executor == host executor (3 epochs, TF32)",
          "cuda executor == host executor (3 epochs, BF16)", "bench_epoch reference graph BF16",
          "bench_epoch small graph WHILE loop", "bench_rollout_cuda (us per step, small)", "bench_rollout_cuda (us per step, reference)", "bench_epoch small graph cluster", "bench_epoch small graph cluster BF16", "bench_epoch small graph cluster BF16 mma",
          "compute-sanitizer memcheck", "compute-sanitizer racecheck", "compute-sanitizer synccheck",
          "compute-sanitizer initcheck", "grpo info --graph (small)", "grpo info --graph (reference)",
          "grpo info --graph (reference bf16)",
          "bench_kernels_cuda (small and reference shapes)", "bench_epoch small graph", "bench_epoch reference graph",
          "torch baseline small eager", "torch baseline reference compile", "engine ahead of PyTorch",
          "issue 16 goals (small >= 1000, reference bf16 >= 250 epochs/s)",
          "cuBLASLt heuristic answers (bench_gemm_algos_cuda)", "grpo tune-gemm (reference, bf16)",
          "bench_epoch reference graph BF16 tuned", "bench_epoch reference graph BF16 2 streams",
          "bench_epoch small graph 2 streams"]
for w in wanted:
    expect(w in checks, "check %r missing" % w)
# Every GPU command is printed, not run: the sanitizer and train steps name their programs.
for frag in ("[dry run, not run] nvidia-smi", "compute-sanitizer --tool racecheck", "bench_epoch --preset reference",
             "torch_baseline.py --preset small --device cuda", "--precision bf16", "--rollout-loop on",
             "--cluster-rollout on", "--cluster-rollout mma", "--gtest_filter=RolloutClusterCuda.*",
             "--kernel-name kns=rollout_cluster_kernel", "--batch-size 16",
             "bench_gemm_algos_cuda --ranks 8", "tune-gemm --preset reference --precision bf16",
             "--ranks 32", "--rollout-streams 2"):
    expect(frag in p.stdout, "the dry run does not print %r" % frag)
expect(md.startswith("# GPU check: none"), "report title")
expect("| check | result | figure | s |" in md.split("## Device")[0], "summary table before the details")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("gpu_check dry run: %d checks reported, all as expected" % len(checks))
