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
from gpu_kit import checks_sanity, checks_speed, kit as kitmod, parse, report  # noqa: E402
from tests.tools.stand_in import stand_in as _stand_in  # noqa: E402


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


def _kit(d, dry_run=False, budget=3600):
    return kitmod.Kit(ROOT, os.path.join(d, "out"), d, quick=False, dry_run=dry_run, python=sys.executable,
                      budget=budget)


def _kit_with(d, name, script):
    """A kit whose build folder holds the stand-in program `name`."""
    kit = _kit(d)
    kit.build = os.path.join(d, "bin")
    _stand_in(kit.build, name, script)
    return kit


class Goals(unittest.TestCase):
    """Issue 16's goals: the fastest allowed variant per preset, eager and --algo grpo not counted."""

    def run_goals(self, small, reference, pipelined=None):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit(d)
            kit.data["epochs_per_s_by_variant"] = {"small": small, "reference": reference}
            if pipelined:
                kit.data["epochs_per_s_pipelined_by_variant"] = pipelined
            checks_speed.goals(kit)
            return kit.checks[-1], kit.data.get("goals")

    def test_missed_names_the_closest_variant(self):
        check, best = self.run_goals({"graph": 400.0, "graph cluster BF16 mma": 990.5, "eager": 5000.0,
                                      "graph grpo": 3000.0}, {"graph": 300.0, "graph BF16": 240.0})
        self.assertEqual(check["status"], "fail")
        self.assertEqual(best["small"], {"variant": "graph cluster BF16 mma", "epochs_per_s": 990.5,
                                         "epochs_per_s_pipelined": None, "goal": 1000.0})
        self.assertEqual(best["reference"]["variant"], "graph BF16")  # fp32's 300 is not the goal's precision
        self.assertIn("small 990.5 epochs/s (graph cluster BF16 mma; - pipelined) of 1000", check["figure"])

    def test_the_goal_is_held_to_the_waited_figure_with_the_pipelined_one_beside_it(self):
        check, best = self.run_goals({"graph": 990.0}, {"graph BF16": 260.0},
                                     {"small": {"graph": 1040.0}, "reference": {"graph BF16": 270.0}})
        self.assertEqual(check["status"], "fail")
        self.assertEqual(best["small"]["epochs_per_s_pipelined"], 1040.0)
        self.assertIn("small 990.0 epochs/s (graph; 1040.0 pipelined) of 1000", check["figure"])

    def test_met_when_both_reach_their_goal(self):
        check, best = self.run_goals({"graph": 1000.0, "graph BF16": 900.0}, {"graph BF16": 251.0})
        self.assertEqual(check["status"], "pass", check["figure"])
        self.assertEqual(best["small"]["variant"], "graph")

    def test_a_missing_preset_is_not_run(self):
        check, best = self.run_goals({"graph": 2000.0}, {"graph": 300.0})
        self.assertEqual(check["status"], "not run")
        self.assertEqual(check["figure"], "no reference figure (its runs failed)")
        self.assertIsNone(best)

    def test_every_goal_variant_is_one_bench_epochs_runs(self):
        labels = {v[0] for v in checks_speed.EPOCH_VARIANTS}
        for preset, _, allowed in checks_speed.GOALS:
            self.assertLessEqual(set(allowed), labels, preset)


class BenchEpochs(unittest.TestCase):
    """bench_epoch's JSON to the epoch checks: a stand-in writes 1 ms epochs waited for and 0.8 ms
    pipelined, twice as fast with --precision bf16, and fails the reference's eager run."""
    FAKE = """\
import json, sys
a = sys.argv
if "reference" in a and "eager" in a:
    sys.exit("no device")
s = 0.0005 if "bf16" in a else 0.001
row = {"executor": "cuda " + a[a.index("--executor") + 1], "epoch_s": s, "epochs_per_s": 1 / s,
       "game_steps_per_s": 27200 / s, "x_floor": 3.0, "epoch_s_pipelined": 0.8 * s,
       "epochs_per_s_pipelined": 1 / (0.8 * s)}
json.dump({"rows": [{"executor": "host", "epoch_s": 1.0}, row]}, open(a[a.index("--json") + 1], "w"))
"""

    def test_both_figures_per_variant_and_a_failed_run_named(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "bench_epoch", self.FAKE)
            checks_speed.bench_epochs(kit)
            checks = {c["name"]: c for c in kit.checks}
            data = kit.data
        self.assertIn("1000.0 epochs/s (1250.0 pipelined)", checks["bench_epoch small graph"]["figure"])
        self.assertEqual(checks["bench_epoch reference eager"]["status"], "fail")
        self.assertEqual(checks["bench_epoch reference graph cluster"]["status"], "not run")
        self.assertAlmostEqual(data["epochs_per_s_by_variant"]["small"]["graph BF16"], 2000.0)
        self.assertAlmostEqual(data["epochs_per_s_pipelined_by_variant"]["reference"]["graph BF16"], 2500.0)
        self.assertNotIn("eager", data["epochs_per_s_by_variant"]["reference"])
        self.assertAlmostEqual(data["epochs_per_s"]["small"], 1000.0)


class GemmTuning(unittest.TestCase):
    """grpo tune-gemm to its check, and its file to bench_epoch's tuned variant: a stand-in grpo
    writes a tuning file; a stand-in bench_epoch records the flags it was given."""
    GRPO = """\
import json, sys
a = sys.argv
assert a[1] == "tune-gemm" and "--preset" in a and "reference" in a and "bf16" in a
products = [{"shape": [0] * 12, "rank": 3, "us": [10.0, 9.0, 8.5, 7.5]},
            {"shape": [1] * 12, "rank": 0, "us": [5.0, 5.1]}]
json.dump({"grpo_gemm_tuning": 1, "products": products}, open(a[a.index("--write") + 1], "w"))
"""
    BENCH = """\
import json, sys
a = sys.argv
with open(a[a.index("--json") + 1] + ".argv", "w") as f:
    f.write(" ".join(a[1:]))
row = {"executor": "cuda graph", "epoch_s": 0.004, "epochs_per_s": 250.0, "game_steps_per_s": 1e7, "x_floor": 2.0}
json.dump({"rows": [row]}, open(a[a.index("--json") + 1], "w"))
"""

    def test_the_tuned_variant_takes_the_file_the_reference_was_tuned_into(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "grpo", self.GRPO)
            _stand_in(kit.build, "bench_epoch", self.BENCH)
            checks_speed.gemm_tuning(kit)
            tune = kit.checks[-1]
            path = kit.data["gemm_tuning"]["file"]
            checks_speed.bench_epochs(kit)
            checks = {c["name"]: c for c in kit.checks}
            with open(os.path.join(kit.tmp("bench"), "epoch-reference-graph-bf16-tuned.json.argv")) as f:
                argv = f.read()
        self.assertEqual(tune["status"], "pass", tune["figure"])
        self.assertEqual(tune["figure"], "2 products, 1 take another answer than the first, 2 us less a call of "
                                         "each once")
        self.assertIn("--gemm-tuning " + path, argv)
        self.assertEqual(checks["bench_epoch reference graph BF16 tuned"]["status"], "pass")
        self.assertEqual(checks["bench_epoch small graph BF16 tuned"]["status"], "not run")

    def test_without_a_file_the_tuned_variant_does_not_run(self):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "bench_epoch", self.BENCH)
            checks_speed.bench_epochs(kit)
            checks = {c["name"]: c for c in kit.checks}
        self.assertEqual(checks["bench_epoch reference graph BF16 tuned"]["status"], "not run")
        self.assertIn("no tuning file", checks["bench_epoch reference graph BF16 tuned"]["figure"])


class BenchSurvey(unittest.TestCase):
    """A bench program's JSON to a check: a stand-in bench_gemm_algos_cuda writes the rows."""

    def survey(self, rows_json):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "bench_gemm_algos_cuda",
                            "import sys\nopen(sys.argv[sys.argv.index('--json') + 1], 'w').write(%r)\n" % rows_json)
            checks_speed.gemm_algorithms(kit)
            return kit.checks[-1], kit.data.get("gemm_algos")

    def test_names_the_product_furthest_from_its_best(self):
        answers = [{"us": 12.0 - r, "algo_id": r, "tile_id": 0, "split_k": 1} for r in range(4)]
        rows = [{"precision": "bf16", "op": "forward", "case": "reference rollout", "M": 544, "H": 2048,
                 "first_us": 12.0, "best_us": 8.0, "best_rank": 3, "tflops_best": 570.0, "answers": answers},
                {"precision": "fp32", "op": "backward_input", "case": "small loss", "M": 27200, "H": 512,
                 "first_us": 10.0, "best_us": 9.8, "best_rank": 1, "tflops_best": 1.45, "answers": answers[:2]}]
        check, data = self.survey(json.dumps({"rows": rows}))
        self.assertEqual(check["status"], "pass", check["figure"])
        self.assertEqual(check["figure"], "rank 0 within 5% of the best in 1 of 2 products; furthest: bf16 forward "
                                          "reference rollout, rank 3 1.50x faster")
        self.assertEqual(data, rows)

    def test_a_malformed_document_fails(self):
        check, data = self.survey(json.dumps({"rows": [{"precision": "bf16"}]}))
        self.assertEqual(check["status"], "fail")
        self.assertIn("bad JSON", check["figure"])
        self.assertIsNone(data)

    def test_a_row_without_what_the_report_reads_fails_here_not_in_the_report(self):
        row = {"precision": "bf16", "op": "forward", "case": "c", "M": 1, "H": 1, "first_us": 2.0, "best_us": 1.0,
               "best_rank": 1, "tflops_best": 1.0, "answers": [{"us": 2.0, "algo_id": 0}]}  # no answer of rank 1
        check, data = self.survey(json.dumps({"rows": [row]}))
        self.assertEqual(check["status"], "fail")
        self.assertIsNone(data)


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
                                       "first_us": 12.0, "best_us": 9.0, "best_rank": 1, "tflops_best": 506.2}]
            kit.data["rollout_us_per_step"] = {"small": {"eager": 22.5, "graph, cluster kernel": 9.25},
                                               "reference": {"eager": 160.0}}
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
        self.assertIn("| bf16 | forward | reference rollout | 544x2048 | 12.0 | 9.0 | 1 | 1.33x | 506 | 66, 18, 2 |", md)
        self.assertIn("goals, the fastest allowed variant against each: small 100.0 epochs/s (graph BF16) of 1000.", md)
        # The rollout per preset, a mode one preset lacks shown as "-".
        self.assertIn("| mode | small | reference |", md)
        self.assertIn("| eager | 22.50 | 160.00 |", md)
        self.assertIn("| graph, cluster kernel | 9.25 | - |", md)
        self.assertIn("(each figure above waits for its epoch): small: graph BF16 120.0.", md)


if __name__ == "__main__":
    unittest.main()
