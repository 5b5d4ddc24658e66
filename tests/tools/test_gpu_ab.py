"""tools/gpu_ab without a GPU: prepare's archive and its refusal of a bad commit, the comparison
of the benches' JSON documents, and a dry run's order of builds and runs."""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

from tests.tools.tool_module import load_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "gpu_ab")

ab = load_tool("gpu_ab")


def tool(args, ab_dir):
    env = dict(os.environ, GRPO_AB=ab_dir)
    return subprocess.run([sys.executable, TOOL] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)


class Prepare(unittest.TestCase):
    def test_a_commit_into_the_folder(self):
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as d:
            p = tool(["prepare", "HEAD"], d)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "BASE")) as f:
                self.assertEqual(f.read().strip(), head)
            with tarfile.open(os.path.join(d, "base.tar")) as t:
                names = t.getnames()
            self.assertIn("tools/build", names)
            self.assertIn("kernels/matmul_few_rows.cu", names)
            self.assertNotIn("base.tar.part", os.listdir(d))

    def test_another_bases_prebuilt_programs_go(self):
        with tempfile.TemporaryDirectory() as d:
            stale = os.path.join(d, "base-gpu.tar.xz")
            with open(stale, "w") as f:
                f.write("another BASE's programs")
            p = tool(["prepare", "HEAD"], d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertFalse(os.path.exists(stale))

    def test_not_a_commit_is_one_line_exit_2_and_nothing_written(self):
        with tempfile.TemporaryDirectory() as d:
            ab_dir = os.path.join(d, "ab")
            p = tool(["prepare", "no-such-commit-anywhere"], ab_dir)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertFalse(os.path.exists(ab_dir))

    def test_run_without_prepare_is_bad_usage(self):
        with tempfile.TemporaryDirectory() as d:
            p = tool(["run", "--dry-run"], d)
            self.assertEqual(p.returncode, 2)
            self.assertIn("prepare", p.stderr)


class Compare(unittest.TestCase):
    ROLLOUT = {"rows": [{"mode": "eager", "us_per_step": 20.0}, {"mode": "graph, cluster kernel", "us_per_step": 9.0}]}
    EPOCH = {"rows": [{"executor": "host", "epochs_per_s": 4.0}, {"executor": "cuda graph", "epochs_per_s": 160.0}]}

    def test_each_bench_gives_its_rows_figure(self):
        self.assertEqual(ab.figures(self.ROLLOUT, "bench_rollout_cuda", "us_per_step"),
                         {"eager": 20.0, "graph, cluster kernel": 9.0})
        self.assertEqual(ab.figures(self.EPOCH, "bench_epoch", "epochs_per_s"), {"cuda graph": 160.0})

    def test_means_a_side_and_the_ratio(self):
        rows = ab.compare("epoch small", "epochs_per_s",
                          {"new": [{"cuda graph": 160.0}, {"cuda graph": 164.0}],
                           "base": [{"cuda graph": 115.0, "cuda eager": 100.0}, {"cuda graph": 117.0}]})
        graph = next(r for r in rows if r["label"] == "cuda graph")
        self.assertEqual((graph["base"], graph["new"]), (116.0, 162.0))
        self.assertAlmostEqual(graph["new_over_base"], 162.0 / 116.0)
        eager = next(r for r in rows if r["label"] == "cuda eager")
        self.assertIsNone(eager["new"])
        self.assertIsNone(eager["new_over_base"])
        md = ab.markdown(rows, "0123456789abcdef", "Test GPU")
        self.assertIn("# A/B on Test GPU: this tree against 0123456789", md)
        self.assertIn("| epoch small | cuda graph | epochs_per_s | 116.00 | 162.00 | 1.397x |", md)
        self.assertIn("| epoch small | cuda eager | epochs_per_s | 100.00 | - | - |", md)


class DryRun(unittest.TestCase):
    def test_prints_both_builds_then_each_case_in_turns(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(tool(["prepare", "HEAD"], d).returncode, 0)
            p = tool(["run", "--dry-run", "--out", os.path.join(d, "out")], d)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = [ln for ln in p.stdout.splitlines() if "[dry run, not run]" in ln]
        self.assertEqual(len(lines), 2 + 4 * len(ab.CASES))
        self.assertIn(os.path.join(ROOT, "tools", "build") + " gpu", lines[0])
        self.assertIn(os.path.join("build", "ab", "base-src", "tools", "build") + " gpu", lines[1])
        runs = lines[2:6]  # the first case: new, base, new, base
        self.assertEqual([os.path.join("build", "ab", "base-src") in ln for ln in runs], [False, True, False, True])
        self.assertTrue(all("bench_rollout_cuda --preset small" in ln for ln in runs))
        self.assertIn("bench_epoch --preset reference --precision bf16 --executor graph", p.stdout)


if __name__ == "__main__":
    unittest.main()
