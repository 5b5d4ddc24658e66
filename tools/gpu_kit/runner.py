"""Runs the kit's commands: one log file per command, a time limit each, never an exception
out of a failed command (a check records the failure and the kit goes on), and a background
poll of the GPU's used memory so that each check can report its peak."""
import os
import shlex
import signal
import subprocess
import threading
import time


class Result:
    def __init__(self, rc, out, seconds, log, timed_out=False):
        self.rc, self.out, self.seconds, self.log, self.timed_out = rc, out, seconds, log, timed_out

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out


class Runner:
    """Runs commands from the repository root, logging each under work/logs/."""

    def __init__(self, root, work, dry_run, budget, env=None):
        self.root, self.work, self.dry_run = root, work, dry_run
        self.deadline = time.monotonic() + budget
        self.logs = os.path.join(work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.env = dict(os.environ, **(env or {}))
        self.count = 0
        self.why_not = None  # why the last run() returned None: the reason a check records as 'not run'

    def run(self, name, argv, timeout, needs_gpu=True, cwd=None):
        """Runs argv (a list) unless this is a dry run and it needs a GPU; returns a Result, or
        None when it was only printed (why_not says why). The time limit is cut to what is left
        of the kit's budget, so that the report is always written; past the budget nothing more
        starts, and a step that never started is 'not run', not a failure."""
        self.count += 1
        log = os.path.join(self.logs, "%02d-%s.log" % (self.count, name))
        shown = " ".join(shlex.quote(a) for a in argv)
        if self.dry_run and needs_gpu:
            print("  [dry run, not run] " + shown, flush=True)
            self.why_not = "dry run"
            return None
        left = int(self.deadline - time.monotonic()) - 10
        if left < 10:
            print("  [over the time budget, not run] " + shown, flush=True)
            self.why_not = "over the time budget"
            return None
        cut = left < timeout  # the budget, not the step's own limit, would end it
        timeout = min(timeout, left)
        print("  $ " + shown, flush=True)
        start = time.monotonic()
        out, rc, timed_out = self._run(argv, cwd or self.root, timeout)
        seconds = time.monotonic() - start
        with open(log, "w") as f:
            f.write("$ " + shown + "\n" + out + "\n[exit %d after %.1f s]\n" % (rc, seconds))
        if rc != 0:
            tail = "\n".join(out.strip().splitlines()[-5:])
            print("    exit %d after %.1f s; last lines:\n    %s" % (rc, seconds, tail.replace("\n", "\n    ")),
                  flush=True)
        if timed_out and cut:  # half a run says nothing of the code: not run, like a step never started
            self.why_not = "cut short by the time budget after %.0f s" % seconds
            return None
        return Result(rc, out, seconds, os.path.relpath(log, self.work), timed_out)

    def _run(self, argv, cwd, timeout):
        """(output, exit code, timed out). The command runs in a process group of its own, and a
        timeout kills the whole group: what it started (the program under compute-sanitizer or
        ncu, ctest's tests, the build's compilers) must not go on holding the GPU or the build
        folder while the next step runs."""
        try:
            p = subprocess.Popen(argv, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        except OSError as e:
            return "[gpu_check: could not start: %s]\n" % e, 127, False
        try:
            raw, _ = p.communicate(timeout=timeout)
            return raw.decode("utf-8", "replace"), p.returncode, False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raw, _ = p.communicate()
            return raw.decode("utf-8", "replace") + "\n[gpu_check: killed after %d s]\n" % timeout, 124, True


class MemoryPoll:
    """Samples nvidia-smi's memory.used (MiB, the whole GPU: every process and context) every
    0.2 s on a thread; peak() since the last reset()."""

    def __init__(self, gpu_index=0):
        self.gpu = str(gpu_index)
        self._peak = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    def start(self):
        argv = ["nvidia-smi", "--id=" + self.gpu, "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                "-lms", "200"]
        try:
            self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return True

    def _read(self):
        for line in self._proc.stdout:
            try:
                v = int(line.strip())
            except ValueError:
                continue
            with self._lock:
                self._peak = max(self._peak, v)

    def reset(self):
        with self._lock:
            self._peak = 0

    def peak(self):
        with self._lock:
            return self._peak

    def stop(self):
        if self._thread:
            self._proc.terminate()
            self._proc.wait()
