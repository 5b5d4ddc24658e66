"""tools/profile_ncu without a GPU: its readers of Nsight Compute's raw and source pages as ncu
prints them, a dry run, bad usage, and a whole run with a stand-in ncu."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import ncu  # noqa: E402
from tests.tools.stand_in import stand_in as _stand_in  # noqa: E402


# Nsight Compute's raw page as `ncu --import R --page raw --csv --print-units base` writes it: a
# header, a row of units, a row per profiled kernel (values may carry thousands separators).
RAW = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
       '"Device","CC","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
       '"launch__registers_per_thread","launch__grid_size",'
       '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio"\n'
       '"","","","","","","","","","","","usecond","%","register/thread","","inst","inst","inst","inst","inst","inst"\n'
       '"0","123","bench_epoch","h","head_loss_grad_kernel","1","7","(256, 1, 1)","(1,700, 1, 1)","0","9.0",'
       '"12.5","61.2","91","1,700","7.5","2.25","0.5","0","3.1","9"\n')


# The source page as `ncu --import R --page source --csv --print-source sass` writes it: the kernel's
# name, a header, a row per SASS instruction, with the samples per stall reason, issued or not.
SOURCE = ('"Kernel Name","k(int)",\n'
          '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_long_sb","stall_selected","stall_barrier (Not Issued)"\n'
          '"0x10","      LDG.E R2, desc[UR4][R2.64]","2","1","64","0","0","2","0"\n'
          '"0x20","      STS [R3], R2","30","30","64","0","28","2","0"\n'
          '"0x30","      BAR.SYNC.DEFER_BLOCKING 0x0","8","8","64","8","0","0","8"\n'
          '"0x40","      EXIT","0","0","64","0","0","0","0"\n')


class NcuPages(unittest.TestCase):
    def test_raw_page_to_summary(self):
        rows = ncu.read_raw("==PROF== Disconnected\n" + RAW)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["gpu__time_duration.sum"], 12500.0)  # us to ns
        self.assertEqual(rows[0]["launch__grid_size"], 1700.0)
        s = ncu.summary_row("case", "head_loss_grad_kernel", rows[0])
        self.assertAlmostEqual(s["us"], 12.5)
        self.assertEqual(s["DRAM %"], 61.2)
        self.assertEqual(s["regs"], 91.0)
        self.assertIsNone(s["SM %"])  # not in this page
        self.assertEqual(s["stalls"], "long_scoreboard 7.5, membar 3.1, barrier 2.2")
        md = ncu.markdown([s])
        self.assertIn("| case | head_loss_grad_kernel | 12.5 | - | - | 61 |", md)
        self.assertEqual(md.count("\n"), 3)

    def test_a_page_without_units_reads_the_values_as_they_are(self):
        lines = RAW.splitlines()
        rows = ncu.read_raw(lines[0] + "\n" + lines[2] + "\n")
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["gpu__time_duration.sum"], 12.5)
        self.assertEqual(rows[0]["Kernel Name"], "head_loss_grad_kernel")

    def test_not_a_raw_page(self):
        with self.assertRaises(ValueError):
            ncu.read_raw("==ERROR== the application returned an error code (1)\n")

    def test_source_page_to_where_the_samples_fall(self):
        s = ncu.read_source(SOURCE, top=2)
        self.assertEqual((s["instructions"], s["samples"], s["executed"]), (4, 40.0, 256.0))
        self.assertEqual([k for k, _ in s["reasons"]], ["long_sb", "barrier", "selected"])  # no "(Not Issued)"
        self.assertAlmostEqual(dict(s["reasons"])["long_sb"], 0.7)
        self.assertEqual([(i, sass, why) for i, sass, _, why in s["hottest"]],
                         [(1, "STS [R3], R2", "long_sb"), (2, "BAR.SYNC.DEFER_BLOCKING 0x0", "barrier")])
        md = ncu.source_markdown([{"case": "c", "kernel": "k", "source": s}, {"case": "c", "kernel": "none"}])
        self.assertIn("| c | k | 4 | 256 | long_sb 70%, barrier 20%, selected 10% | 1: `STS [R3], R2` 75% long_sb;", md)
        self.assertEqual(md.count("\n"), 3)  # a kernel without a source page has no line

    def test_not_a_source_page(self):
        with self.assertRaises(ValueError):
            ncu.read_source(RAW)

    def test_a_run_with_stand_ins_reports_both_tables(self):
        """profile_ncu end to end with a stand-in ncu (a report file, the raw page, the source page
        for every kernel but the cluster kernel's) and a stand-in bench_epoch."""
        fake = """\
import os, sys
a = sys.argv
if "--export" in a:
    open(a[a.index("--export") + 1] + ".ncu-rep", "w").close()
elif "raw" in a:
    sys.stdout.write(os.environ["RAW_PAGE"])
elif "rollout_cluster_kernel" in a[a.index("--import") + 1]:
    sys.exit(1)  # this ncu gives no source page for it
else:
    sys.stdout.write(os.environ["SOURCE_PAGE"])
"""
        with tempfile.TemporaryDirectory() as d:
            _stand_in(os.path.join(d, "bin"), "ncu", fake)
            _stand_in(os.path.join(d, "build"), "bench_epoch", "")
            env = dict(os.environ, NCU=os.path.join(d, "bin", "ncu"), GRPO_BUILD=os.path.join(d, "build"),
                       RAW_PAGE=RAW, SOURCE_PAGE=SOURCE)
            out = os.path.join(d, "out")
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_ncu"), "--out", out], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout.decode())
            with open(os.path.join(out, "ncu-report.md")) as f:
                md = f.read()
            with open(os.path.join(out, "ncu-report.json")) as f:
                doc = json.load(f)
        kernels = sum(len(k) for _, _, k in ncu.CASES)
        self.assertEqual(len(doc["rows"]), kernels)
        with_source = [r for r in doc["rows"] if "source" in r]
        self.assertEqual(len(with_source), kernels - 1)
        self.assertEqual([r["kernel"] for r in doc["rows"] if "source_error" in r], ["rollout_cluster_kernel"])
        self.assertIn("## Where the stall samples fall", md)
        self.assertEqual(md.count("long_sb 70%"), kernels - 1)
        self.assertIn("- no source page: small-bf16-cluster-mma rollout_cluster_kernel", md)

    def test_dry_run_prints_every_kernel_and_profiles_none(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_ncu"), "--dry-run", "--out", d],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 0, out)
            self.assertEqual(os.listdir(d), [])
        kernels = sum(len(k) for _, _, k in ncu.CASES)
        self.assertEqual(out.count("[dry run, not run] ncu "), kernels)
        self.assertIn("--kernel-name regex:rollout_cluster_kernel --launch-skip 2 --launch-count 1", out)
        self.assertIn("--cluster-rollout mma --executor graph", out)

    def test_bad_usage_exits_2_and_writes_nothing(self):
        with tempfile.NamedTemporaryFile() as f:
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "profile_ncu"), "--out", f.name],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.decode().strip().splitlines()), 1)
            self.assertEqual(os.path.getsize(f.name), 0)


if __name__ == "__main__":
    unittest.main()
