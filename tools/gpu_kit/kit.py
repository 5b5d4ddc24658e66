"""The kit's state: options, paths, the command runner and the checks recorded so far."""
import os
import time

from . import runner

# The tiny configuration of tests/engine/engine_test_util.h (tiny_config), as grpo train flags.
TINY = ["--screen-width", "6", "--screen-height", "6", "--min-interval-steps", "2", "--hidden-size", "20",
        "--batch-size", "2", "--max-steps", "8", "--lr-rate", "3e-3", "--seed", "1234", "--patience", "0",
        "--save-checkpoint-per-num-epoch", "-1"]
# A short run for the sanitizers: a wider policy than TINY so the kernels run more than one block.
SHORT = ["--hidden-size", "64", "--batch-size", "2", "--max-steps", "16", "--seed", "7", "--patience", "0",
         "--save-checkpoint-per-num-epoch", "-1"]
# The same with 16 replicas, 272 games: past the few-row product's 256, so the epoch graph holds
# no WHILE node. racecheck crashed (SIGSEGV) replaying a graph with one, and reported hazards
# between different kernels of its body as if they shared a block (an H200, 2026-11-26).
SHORT_NO_LOOP = SHORT[:2] + ["--batch-size", "16"] + SHORT[4:]


class Kit:
    def __init__(self, root, out, work, quick, dry_run, python, budget=3600):
        self.root, self.out, self.work = root, out, work
        self.quick, self.dry_run, self.python = quick, dry_run, python
        self.no_torch = False  # gpu_check --no-torch: PyTorch's baseline not run
        self.build = os.path.join(root, "build", "gpu")
        self.run = runner.Runner(root, work, dry_run, budget)
        self.memory = runner.MemoryPoll()
        self.checks = []
        self.device = {}
        self.data = {}  # figures for the JSON beyond the checks (kernels, epochs, torch, ...)
        self.started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        self.t0 = time.monotonic()

    def bin(self, name):
        return os.path.join(self.build, name)

    def tmp(self, name):
        path = os.path.join(self.work, name)
        os.makedirs(path, exist_ok=True)
        return path

    def record(self, name, status, figure, seconds=0.0, log=None, detail=None):
        """status: pass, fail, or 'not run' (a dry run, or a step that could not start because
        an earlier one failed; never counted as a pass)."""
        entry = {"name": name, "status": status, "figure": figure, "seconds": round(seconds, 1)}
        if log:
            entry["log"] = log
        if detail:
            entry["detail"] = detail
        self.checks.append(entry)
        print("[%s] %s: %s" % (status.upper(), name, figure), flush=True)
        return status == "pass"

    def not_run(self, name, why):
        return self.record(name, "not run", why)

    def from_result(self, name, res, figure_ok, figure_fail=None):
        """Records a check from one command's Result; None (dry run) is 'not run'."""
        if res is None:
            return self.not_run(name, self.run.why_not)
        if res.ok:
            return self.record(name, "pass", figure_ok, res.seconds, res.log)
        why = figure_fail or ("timed out" if res.timed_out else "exit %d" % res.rc)
        return self.record(name, "fail", why, res.seconds, res.log)

    def have(self, *names):
        """True when every named build product exists (a failed build leaves them missing)."""
        return all(os.path.exists(self.bin(n)) for n in names)

    def elapsed(self):
        return time.monotonic() - self.t0
