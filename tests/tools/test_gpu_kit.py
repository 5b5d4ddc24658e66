"""tools/gpu_kit without a GPU: the parsers on tool output as those tools print it, and the
report on a made-up set of checks."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import checks_sanity, kit as kitmod, parse, report  # noqa: E402
from tests.tools.stand_in import stand_in as _stand_in  # noqa: E402
from tests.tools.gpu_kit_util import kit as _kit, kit_with as _kit_with  # noqa: E402


class SanitizerSummary(unittest.TestCase):
    def test_memcheck_clean_and_dirty(self):
        self.assertEqual(parse.sanitizer_errors("========= COMPUTE-SANITIZER\nok\n========= ERROR SUMMARY: 0 errors\n"),
                         (0, 0))
        self.assertEqual(parse.sanitizer_errors("========= Invalid __global__ write\n========= ERROR SUMMARY: 1 error\n"),
                         (1, 0))

    def test_one_summary_per_process_is_summed(self):
        text = "========= ERROR SUMMARY: 2 errors\nchild\n========= ERROR SUMMARY: 3 errors\n"
        self.assertEqual(parse.sanitizer_errors(text), (5, 0))

    def test_racecheck_counts_errors_and_warnings_once(self):
        text = ("========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)\n"
                "========= ERROR SUMMARY: 2 errors\n")
        self.assertEqual(parse.sanitizer_errors(text), (2, 1))

    def test_no_summary_is_an_error(self):
        with self.assertRaises(ValueError):
            parse.sanitizer_errors("Segmentation fault\n")


class Outputs(unittest.TestCase):
    def test_graph_node_kinds(self):
        out = ("graph nodes        425 (one epoch, captured on cuda; 427 node runs per replay)\n"
               "graph node kinds   420 kernel, 3 memset, 1 memcpy, 1 conditional, 0 other; 0 in loop bodies\n")
        self.assertEqual(parse.graph_node_kinds(out),
                         "420 kernel, 3 memset, 1 memcpy, 1 conditional, 0 other; 0 in loop bodies")
        self.assertIsNone(parse.graph_node_kinds("graph nodes        425 (one epoch, captured on cuda)\n"))

    def test_graph_edges(self):
        out = ("graph node kinds   24 kernel, 0 memset, 1 memcpy, 0 conditional, 2 other; 0 in loop bodies\n"
               "graph edges        26, 22 from a kernel to a kernel, 21 programmatic (into a kernel that may start "
               "before the one before it ends)\n")
        self.assertEqual(parse.graph_edges(out), (26, 22, 21))
        self.assertIsNone(parse.graph_edges("graph nodes        425 (one epoch, captured on cuda)\n"))

    def test_graph_nodes(self):
        self.assertEqual(parse.graph_nodes("arena 3 MiB\ngraph nodes        1635 (one epoch, captured on cuda)\n"), 1635)
        with self.assertRaises(ValueError):
            parse.graph_nodes("graph nodes        n/a (no CUDA device)\n")

    def test_junit_counts(self):
        xml = ('<testsuite><testcase name="a" status="run"/><testcase name="b" status="fail"><failure message="x"/>'
               '</testcase><testcase name="c" status="notrun"><skipped message="needs a CUDA GPU"/></testcase>'
               '<testcase name="d" status="run"/></testsuite>')
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write(xml)
        try:
            self.assertEqual(parse.junit_counts(f.name), (2, 1, 1, ["FAILED b", "SKIPPED c"]))
        finally:
            os.remove(f.name)

    def test_an_nvidia_smi_field_without_a_value_is_none(self):
        self.assertEqual(parse.number("81559"), 81559)
        self.assertEqual(parse.number("1980.0"), 1980)
        self.assertIsNone(parse.number("[N/A]"))

    def test_steady_epochs_per_s_skips_the_first_epochs(self):
        rows = [{"epoch": e, "epoch_seconds": s} for e, s in enumerate([0.5, 0.2, 0.002, 0.001, 0.004, 0.001])]
        self.assertAlmostEqual(parse.steady_epochs_per_s(rows, 2), 1 / 0.0015)
        self.assertAlmostEqual(parse.steady_epochs_per_s(rows, 3), 1 / 0.001)
        with self.assertRaises(ValueError):
            parse.steady_epochs_per_s(rows, 6)
        with self.assertRaises(ValueError):
            parse.steady_epochs_per_s([{"epoch": 0, "epoch_seconds": 0.0}], 0)

    def test_safetensors_tensors_ignore_metadata(self):
        header = json.dumps({"__metadata__": {"epoch": "3"}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}).encode()
        data = struct.pack("<3f", 1.0, 2.0, 3.0)
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(struct.pack("<Q", len(header)) + header + data)
        try:
            t = parse.safetensors_tensors(f.name)
        finally:
            os.remove(f.name)
        self.assertEqual(t, {"a": data[:8], "b": data[8:]})


class BuildDiagnostics(unittest.TestCase):
    def test_gcc_nvcc_and_ptxas_lines_once_each(self):
        log = "\n".join([
            "[3/9] Building CXX object a.o",
            "/src/env/replay.cpp:136:17: error: possibly dangling reference [-Werror=dangling-reference]",
            "  136 |     const json& row = ...",
            "/src/kernels/x.cu(42): warning #177-D: variable \"y\" was declared but never referenced",
            "ptxas warning : Registers are spilled to local memory in function 'k'",
            "/src/env/replay.cpp:136:17: error: possibly dangling reference [-Werror=dangling-reference]",
            "cc1plus: all warnings being treated as errors",
            "ninja: build stopped: subcommand failed.",
        ])
        found = parse.diagnostics(log)
        self.assertEqual(len(found), 3)
        self.assertTrue(found[0].startswith("/src/env/replay.cpp:136:17: error"))
        self.assertIn("#177-D", found[1])
        self.assertTrue(found[2].startswith("ptxas warning"))

    def test_clean_log_has_none(self):
        self.assertEqual(parse.diagnostics("[1/2] Building CXX object a.o\n[2/2] Linking CXX executable grpo\n"), [])


class Learning(unittest.TestCase):
    """The learning check on a stand-in grpo that writes metrics.jsonl: scores from -20 up to -4
    (or flat, with --seed 7 swapped for a run that does not learn), 2 ms epochs in fp32, 1 ms in
    bf16."""
    FAKE = """\
import json, sys
a = sys.argv
if "--hidden-size" in a or "--max-steps" in a:
    sys.exit("the learning runs must train the preset, not the tiny configuration")
out, n = a[a.index("--out") + 1], int(a[a.index("--total-epochs") + 1])
bf16 = "--precision" in a
with open(out + "/metrics.jsonl", "w") as f:
    for e in range(n):
        score = -20.0 + 16.0 * e / (n - 1) if %s else -20.0
        f.write(json.dumps({"epoch": e, "score": score, "epoch_seconds": 0.001 if bf16 else 0.002}) + "\\n")
"""

    def learning(self, learns):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "grpo", self.FAKE % learns)
            checks_sanity.learning(kit)
            return kit.checks[-1], kit.data.get("learning")

    def test_the_trainers_rate_beside_the_scores(self):
        check, data = self.learning(True)
        self.assertEqual(check["status"], "pass", check)
        self.assertIn("fp32 -19.76 -> -5.31 (500 epochs/s in grpo train)", check["figure"])
        self.assertIn("bf16 -19.76 -> -5.31 (1000 epochs/s in grpo train)", check["figure"])
        self.assertAlmostEqual(data["bf16"]["train_epochs_per_s"], 1000.0)

    def test_a_run_that_does_not_learn_fails(self):
        check, _ = self.learning(False)
        self.assertEqual(check["status"], "fail")


class HostParity(unittest.TestCase):
    """The CUDA executor against the host on a stand-in grpo: from epoch 1 the CUDA run plays
    other games (a score one higher) and its losses are 5% off."""
    FAKE = """\
import json, sys
a = sys.argv
out, cuda = a[a.index("--out") + 1], "cuda" in a
with open(out + "/metrics.jsonl", "w") as f:
    for e in range(3):
        parted = cuda and e >= 1
        f.write(json.dumps({"epoch": e, "score": e + (1.0 if parted else 0.0), "reward": 0.5,
                            "loss": (1.05 if parted else 1.0) / (e + 1), "grad_norm": 2.0}) + "\\n")
"""

    def parity(self, precision):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "grpo", self.FAKE)
            checks_sanity.cuda_matches_host(kit, precision)
            return kit.checks[-1]

    def test_where_a_flip_is_allowed_losses_are_compared_before_it(self):
        check = self.parity("bf16")
        self.assertEqual(check["status"], "pass", check)
        self.assertIn("an action flipped in epoch 1, losses compared before it", check["figure"])

    def test_fp32_allows_no_flip(self):
        check = self.parity("fp32")
        self.assertEqual(check["status"], "fail")
        self.assertIn("epoch 1 score 2.0 vs host 1.0", check["detail"])
        self.assertIn("epoch 1 loss 0.525 vs host 0.5", check["detail"])


class CtestSkips(unittest.TestCase):
    """A stand-in ctest that writes JUnit with two passes and one skip: a failure for the *_cuda
    tests, a named skip for the host tests."""
    FAKE = """\
import sys
a = sys.argv
with open(a[a.index("--output-junit") + 1], "w") as f:
    f.write('<testsuite><testcase name="A" status="run"/><testcase name="B" status="run"/>'
            '<testcase name="C" status="notrun"><skipped message="no mount namespace"/></testcase></testsuite>')
"""

    def run_ctest(self, skips_fail):
        from gpu_kit import checks_build
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "grpo", "")  # ctest() runs only where grpo was built
            path = os.path.join(d, "path")
            _stand_in(path, "ctest", self.FAKE)
            kit.run.env["PATH"] = path + os.pathsep + kit.run.env.get("PATH", "")
            checks_build.ctest(kit, "tests", [], 60, skips_fail=skips_fail)
            return kit.checks[-1]

    def test_a_skip_fails_the_cuda_tests(self):
        check = self.run_ctest(True)
        self.assertEqual((check["status"], check["figure"]), ("fail", "2 passed, 0 failed, 1 skipped"))

    def test_the_host_tests_name_their_skips(self):
        check = self.run_ctest(False)
        self.assertEqual(check["status"], "pass")
        self.assertEqual(check["detail"], ["SKIPPED C"])


class Sanitizers(unittest.TestCase):
    """A stand-in compute-sanitizer that logs its arguments and reports a clean run: racecheck,
    and only racecheck, keeps clear of graphs with a WHILE node."""
    FAKE = """\
import os, sys
with open(os.environ["SANITIZER_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
tool = sys.argv[sys.argv.index("--tool") + 1]
print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" if tool == "racecheck"
      else "========= ERROR SUMMARY: 0 errors")
"""

    def test_racecheck_runs_no_loop_graph_and_only_the_cluster_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d)
            kit.build = os.path.join(d, "bin")
            for name in ("grpo", "test_kernels_cuda", "test_engine_cuda"):
                _stand_in(kit.build, name, "")
            path, log = os.path.join(d, "path"), os.path.join(d, "calls.log")
            _stand_in(path, "compute-sanitizer", self.FAKE)
            kit.run.env["PATH"] = path + os.pathsep + kit.run.env.get("PATH", "")
            kit.run.env["SANITIZER_LOG"] = log
            checks_sanity.sanitizers(kit)
            with open(log) as f:
                calls = f.read().splitlines()
        self.assertEqual([c["status"] for c in kit.checks], ["pass"] * 4)
        self.assertEqual(len(calls), 16)
        for call in calls:
            race = "--tool racecheck" in call
            cluster = "RolloutClusterCuda" in call
            train = " train " in call
            self.assertEqual("--kernel-name kns=rollout_cluster_kernel" in call, race and cluster, call)
            if train:
                self.assertIn("--batch-size 16" if race else "--batch-size 2", call)


class Budget(unittest.TestCase):
    def test_a_step_past_the_budget_is_not_run_not_failed(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d, budget=0)
            res = kit.run.run("late", [sys.executable, "-c", "raise SystemExit(3)"], 30, needs_gpu=False)
            self.assertIsNone(res)
            kit.from_result("late step", res, "ran")
        self.assertEqual(kit.checks[-1]["status"], "not run")
        self.assertEqual(kit.checks[-1]["figure"], "over the time budget")

    def test_a_step_the_budget_cuts_short_is_not_run_and_its_children_die(self):
        marker = "61.%d" % os.getpid()  # a sleep of its own, to look for afterwards
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d, budget=21)  # 11 s left for the step (10 kept for the report)
            t0 = time.monotonic()
            res = kit.run.run("long", ["bash", "-c", "sleep %s & sleep %s" % (marker, marker)], 300, needs_gpu=False)
            self.assertLess(time.monotonic() - t0, 30, "the step waited for what it started")
            self.assertIsNone(res)
            self.assertTrue(kit.run.why_not.startswith("cut short by the time budget"), kit.run.why_not)
        left = subprocess.run(["pgrep", "-f", "sleep " + marker], stdout=subprocess.PIPE, text=True).stdout
        self.assertEqual(left, "", "the command's children outlived it")

    def test_a_step_over_its_own_limit_fails_and_its_children_die(self):
        marker = "62.%d" % os.getpid()
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d)
            t0 = time.monotonic()
            res = kit.run.run("long", ["bash", "-c", "sleep %s & sleep %s" % (marker, marker)], 1, needs_gpu=False)
            self.assertLess(time.monotonic() - t0, 30, "the step waited for what it started")
            kit.from_result("long step", res, "ran")
        self.assertTrue(res.timed_out)
        self.assertEqual(kit.checks[-1]["status"], "fail")
        left = subprocess.run(["pgrep", "-f", "sleep " + marker], stdout=subprocess.PIPE, text=True).stdout
        self.assertEqual(left, "", "the command's children outlived it")

    def test_a_dry_run_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d, dry_run=True)
            kit.from_result("gpu step", kit.run.run("gpu", ["nvidia-smi"], 30), "ran")
        self.assertEqual(kit.checks[-1]["figure"], "dry run")

    def test_the_reason_is_each_calls_own(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d, dry_run=True, budget=0)
            kit.from_result("host step", kit.run.run("host", [sys.executable, "-c", "0"], 30, needs_gpu=False), "ran")
            kit.from_result("gpu step", kit.run.run("gpu", ["nvidia-smi"], 30), "ran")
        self.assertEqual([c["figure"] for c in kit.checks], ["over the time budget", "dry run"])


class Report(unittest.TestCase):
    def test_summary_table_first_and_failures_counted(self):
        with tempfile.TemporaryDirectory() as d:
            kit = kitmod.Kit(ROOT, os.path.join(d, "out"), d, quick=False, dry_run=False, python=sys.executable)
            kit.device["name"] = "Test GPU"
            kit.record("alpha", "pass", "1 thing")
            kit.record("beta | gamma", "fail", "2 things", detail=["FAILED x"])
            kit.not_run("delta", "dry run")
            kit.data["epochs_per_s"] = {"small": 100.0, "reference": None}
            kit.data["goals"] = {"small": {"variant": "graph BF16", "epochs_per_s": 100.0, "goal": 1000.0}}
            kit.data["epochs_per_s_pipelined_by_variant"] = {"small": {"graph BF16": 120.0}, "reference": {}}
            kit.data["gemm_algos"] = [{"precision": "bf16", "op": "forward", "case": "reference rollout", "M": 544,
                                       "H": 2048, "answers": [{"us": 12.0, "algo_id": 21, "tile_id": 3, "split_k": 1},
                                                              {"us": 9.0, "algo_id": 66, "tile_id": 18, "split_k": 2}],
                                       "first_us": 12.0, "best_us": 9.0, "best_rank": 1, "tflops_best": 506.2,
                                       "splits": [{"split": 2, "us": 7.5}, {"split": 3, "us": None}]}]
            kit.data["rollout_us_per_step"] = {"small": {"eager": 22.5, "graph, cluster kernel": 9.25,
                                                         "graph, cluster kernel, bf16 mma": 6.0,
                                                         "graph, cluster kernel, bf16 mma, spin waits": 4.5},
                                               "reference": {"eager": 160.0, "graph, steps unrolled, bf16": 23.7}}
            kit.data["rollout_phases"] = {"small": {"graph, cluster kernel": {
                "blocks": 8, "steps": 199, "step_cycles": 18000.0, "sm_clock_mhz": 1980.0,
                "rows": [{"phase": "product", "cycles_block0": 2100.0, "cycles_median": 2000.0, "cycles_max": 2500.0,
                          "share": 0.25, "us": 2.3125}],
                "placement": {"blocks": 136, "sms": 128, "shared_sms": 8,
                              "alone": {"clusters": 15, "us_median": 4.5, "us_min": 4.25, "us_max": 4.75},
                              "sharing": {"clusters": 2, "us_median": 6.5, "us_min": 6.25, "us_max": 6.75}}}},
                "reference": {"graph, steps unrolled, bf16": {
                    "whose": "the first games'", "blocks": 8, "steps": 99, "step_cycles": 40000.0,
                    "sm_clock_mhz": 1980.0,
                    "rows": [{"phase": "a1 wait (product)", "cycles_block0": 20000.0, "cycles_median": 19000.0,
                              "cycles_max": 21000.0, "share": 0.5, "us": 11.85}]}}}
            kit.data["graph_nodes"] = {"small bf16": 27, "reference": 326}
            kit.data["graph_node_kinds"] = {"small bf16": "24 kernel, 0 memset"}
            kit.data["graph_edges"] = {"small bf16": [26, 24, 23]}  # as the JSON gives it back: a list
            doc = report.write(kit)
            with open(os.path.join(d, "out", "gpu-report.md")) as f:
                md = f.read()
            with open(os.path.join(d, "out", "gpu-report.json")) as f:
                js = json.load(f)
        self.assertEqual(doc["summary"]["failed"], 1)
        self.assertEqual(js["summary"], {"passed": 1, "failed": 1, "not_run": 1, "failed_checks": ["beta | gamma"]})
        self.assertEqual(js["device"]["name"], "Test GPU")
        self.assertEqual(js["epochs_per_s"], {"small": 100.0, "reference": None})
        self.assertEqual(js["torch_epochs_per_s"], {"small": None, "reference": None})
        table = md.split("## Device")[0]
        self.assertIn("| beta \\| gamma | FAIL | 2 things |", table)
        self.assertIn("| delta | not run | dry run |", table)
        self.assertIn("FAILED x", md)
        self.assertIn("| bf16 | forward | reference rollout | 544x2048 | 12.0 | 9.0 | 1 | 1.33x | 506 | 66, 18, 2 | "
                      "7.5 (2) |", md)
        self.assertIn("goals, the fastest allowed variant against each: small 100.0 epochs/s (graph BF16) of 1000.", md)
        # The rollout per preset, a mode one preset lacks shown as "-".
        self.assertIn("| mode | small | reference |", md)
        self.assertIn("| eager | 22.50 | 160.00 |", md)
        self.assertIn("| graph, cluster kernel | 9.25 | - |", md)
        # The tensor-core kernel's variants as ratios to it; one not run (7 replicas) left out.
        self.assertIn("Against the small preset's cluster kernel on tensor cores (6.00 us a step): with its "
                      "mailboxes' waits spinning 0.75x (below 1: faster;", md)
        self.assertNotIn("119 games in 15 clusters (no SM runs two blocks)", md)
        self.assertIn("- small bf16: 27 (24 kernel, 0 memset); 26 edges, 24 from a kernel to a kernel, 23 of those "
                      "programmatic\n- reference: 326\n", md)
        self.assertIn("(each figure above waits for its epoch): small: graph BF16 120.0.", md)
        # A cluster mode's phases: a row a phase, then the step's cycles as time at the SM's clock.
        self.assertIn("### Where a step of the small rollout goes: graph, cluster kernel (phase clocks)", md)
        self.assertIn("medians over 199 steps; us: the share of the step (by the blocks' medians) of its 9.25 us", md)
        self.assertIn("| product | 2100 | 2000 | 2500 | 25.0% | 2.31 |", md)
        self.assertIn("| step | - | 18000 | - | 100% | 18000 cycles at 1980 MHz: 9.09 us |", md)
        # Where its blocks ran, and the clusters' steps alone and sharing an SM.
        self.assertIn("Where the blocks ran (global timer): 136 blocks on 128 SMs, 8 of them running two blocks "
                      "at once.\n- 15 clusters alone on their SMs: 4.50 us a step (median; 4.25-4.75).\n"
                      "- 2 clusters sharing an SM: 6.50 us a step (median; 6.25-6.75).\n"
                      "- The sharing clusters' step over the others': 1.44x.", md)
        self.assertEqual(md.count("Where the blocks ran"), 1, "the fused step's table has no placement")
        # The fused step's: its blocks named, and a share said to be of the launch.
        self.assertIn("### Where a step of the reference rollout goes: graph, steps unrolled, bf16 (phase clocks)", md)
        self.assertIn("Warp 0 of the first games' 8 blocks, SM cycles a phase, medians over 99 steps", md)
        self.assertIn("a share is of the launch, the a1 wait is the product's part of it.", md)
        self.assertIn("| a1 wait (product) | 20000 | 19000 | 21000 | 50.0% | 11.85 |", md)
        self.assertNotIn("Warp 0 of the first cluster's 8 blocks, SM cycles a phase, medians over 99", md)


if __name__ == "__main__":
    unittest.main()
