"""tools/gpu_session without a GPU: the budget's shares, the summary read from made-up reports
(each part's report may be missing), and bad usage."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

from tests.tools.tool_module import load_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
session = load_tool("gpu_session")

CHECK_MD = """# GPU check: NVIDIA H200

`tools/gpu_check` at commit 0123456789, started 2026-12-01 00:00:00 UTC, 300 s. 40 passed, 1 failed, 0 not run.

| check | result | figure | s |
| --- | --- | --- | --- |
| build (gpu flavour) | pass | prebuilt at 0123456789, packed 2026-11-30 | 2 |
| racecheck | FAIL | cluster-tests 12 errors | 40 |
| learning | pass | learns | 20 |

## Device

- name: NVIDIA H200

Issue 16's goals, the fastest allowed variant against each: small 700.0 epochs/s (graph cluster BF16 mma) of 1000.

## The rollout alone, microseconds per game step (bench_rollout_cuda)

| mode | small | reference |
| --- | --- | --- |
| graph, cluster kernel, bf16 mma | 6.30 | - |
| graph, cluster kernel, bf16 mma, spin waits | 5.10 | - |

### Where a step of the small rollout goes: graph, cluster kernel, bf16 mma (phase clocks)

| phase | cycles, block 0 | median of the blocks | largest of the blocks | share | us |
| product | 2000 | 2000 | 2100 | 20.0% | 1.26 |

### Where a step of the small rollout goes: graph, cluster kernel, bf16 mma, spin waits (phase clocks)

| product | 1 | 1 | 1 | 1% | 0.01 |

### Where a step of the reference rollout goes: graph, steps unrolled, bf16 (phase clocks)

| head | 3000 | 3000 | 3500 | 30.0% | 3.00 |

## Kernels (events, L2 flushed, median)

| op | case | us/call |
"""

AB_MD = """# A/B on NVIDIA H200: this tree against d3c0313839

`tools/gpu_ab run`, 2026-12-01.

| case | row | figure | base | new | new / base |
| --- | --- | --- | --- | --- | --- |
| rollout small | graph, cluster kernel, bf16 mma | us_per_step | 6.35 | 6.30 | 0.992x |
"""

NCU_MD = """# Nsight Compute: the kernels issue 16 still has to decide on

| case | kernel | us |
| --- | --- | --- |
| small-bf16-cluster-mma | rollout_cluster_kernel | 1300.0 |

## Where the stall samples fall

| many | rows |
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Shares(unittest.TestCase):
    def test_each_part_its_share_and_gpu_check_the_rest(self):
        self.assertEqual(session.shares(560, True, True), (560 - session.AB_SHARE - session.NCU_SHARE,
                                                           session.AB_SHARE, session.NCU_SHARE))
        self.assertEqual(session.shares(560, False, True), (560 - session.NCU_SHARE, 0, session.NCU_SHARE))
        self.assertEqual(session.shares(400, False, False), (400, 0, 0))

    def test_no_torch_reaches_gpu_check_alone(self):
        self.assertEqual(session.check_argv("gc", "o", 350, True, False),
                         ["gc", "--out", os.path.join("o", "check"), "--budget", "350", "--no-torch"])
        self.assertEqual(session.check_argv("gc", "o", 350, False, True),
                         ["gc", "--out", os.path.join("o", "check"), "--budget", "350", "--dry-run"])


class Summary(unittest.TestCase):
    def test_the_figures_read_first_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "check", "gpu-report.md"), CHECK_MD)
            write(os.path.join(d, "ab", "ab-report.md"), AB_MD)
            write(os.path.join(d, "ncu", "ncu-report.md"), NCU_MD)
            text = session.summary(d)
        order = ["# GPU check: NVIDIA H200", "Issue 16's goals", "| build (gpu flavour) | pass | prebuilt",
                 "| racecheck | FAIL |", "## The rollout alone", "| graph, cluster kernel, bf16 mma, spin waits | 5.10",
                 "bf16 mma (phase clocks)", "| product | 2000 |", "reference rollout goes", "| head | 3000 |",
                 "# A/B on NVIDIA H200", "| rollout small | graph, cluster kernel, bf16 mma | us_per_step | 6.35",
                 "# Nsight Compute", "| small-bf16-cluster-mma | rollout_cluster_kernel | 1300.0 |"]
        at = [text.find(s) for s in order]
        self.assertNotIn(-1, at, "\n".join(s for s, i in zip(order, at) if i < 0))
        self.assertEqual(at, sorted(at))
        for left_out in ("| learning | pass", "spin waits (phase clocks)", "## Kernels", "## Device",
                         "Where the stall samples fall", "`tools/gpu_ab run`"):
            self.assertNotIn(left_out, text)

    def test_missing_reports_say_so_and_a_long_summary_is_cut(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertIn("no gpu-report.md", session.summary(d))
            write(os.path.join(d, "check", "gpu-report.md"),
                  CHECK_MD.replace("| --- | --- | --- |\n| graph", "| --- | --- | --- |\n" + "| x | 1 | 2 |\n" * 2000
                                   + "| graph"))
            text = session.summary(d)
        self.assertLessEqual(len(text), session.SUMMARY_CHARS + 60)
        self.assertTrue(text.endswith("[cut: the reports hold the rest]"))


class Parts(unittest.TestCase):
    def test_a_part_past_its_limit_is_stopped_with_what_it_started(self):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            # The grandchild holds the output pipe open: only stopping the whole group ends the read.
            rc = session.run_part("slow", ["bash", "-c", "echo started; sleep 60 & wait"], d, lambda ln: True, 1)
            self.assertLess(time.monotonic() - t0, 20)
            self.assertEqual(rc, 1)
            with open(os.path.join(d, "slow-console.log")) as f:
                self.assertEqual(f.read(), "started\n")

    def test_a_part_within_its_limit_gives_its_exit_code(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(session.run_part("ok", ["bash", "-c", "echo one; exit 3"], d, lambda ln: False, 30), 3)


class Usage(unittest.TestCase):
    def test_a_budget_too_short_for_gpu_check_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_session"), "--budget", "100",
                                "--out", os.path.join(d, "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--budget 100 leaves gpu_check", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out")))


if __name__ == "__main__":
    unittest.main()
