"""tools/gpu_kit's speed checks without a GPU: issue 16's goals, bench_epoch's and the cuBLASLt
surveys' JSON to their checks, and grpo tune-gemm's file to the tuned epoch (stand-in programs
where the kit runs the engine's)."""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import checks_speed  # noqa: E402
from tests.tools.stand_in import stand_in as _stand_in  # noqa: E402
from tests.tools.gpu_kit_util import kit as _kit, kit_with as _kit_with  # noqa: E402


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


class NoTorch(unittest.TestCase):
    """--no-torch: the baseline's rows say why they did not run, and nothing is started, not even
    a Python that would fail (a PyTorch run is ~100 s of a lent machine's time)."""

    def test_every_torch_row_is_not_run_and_no_command_starts(self):
        with tempfile.TemporaryDirectory() as d:
            k = _kit(d)
            k.no_torch = True
            k.python = os.path.join(d, "no-such-python")  # a started run would fail, not skip
            k.data["epochs_per_s"] = {"small": 600.0, "reference": 200.0}
            checks_speed.torch_baseline(k)
            checks_speed.ahead_of_torch(k)
            rows = {c["name"]: c for c in k.checks}
            torch_rows = [n for n in rows if n.startswith("torch baseline")]
            self.assertEqual(len(torch_rows), 4)
            for n in torch_rows + ["engine ahead of PyTorch"]:
                self.assertEqual((rows[n]["status"], rows[n]["figure"]), ("not run", "--no-torch"), n)
            self.assertEqual(k.data["torch_epochs_per_s"], {"small": None, "reference": None})


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
products = [{"shape": [0] * 12, "rank": 3, "split": 0, "us": [10.0, 9.0, 8.5, 7.5], "splits": [2], "split_us": [9.9]},
            {"shape": [1] * 12, "rank": 0, "split": 0, "us": [5.0, 5.1], "splits": [2], "split_us": [5.2]},
            {"shape": [2] * 12, "rank": 0, "split": 3, "us": [13.0, 13.1], "splits": [2, 3], "split_us": [9.0, 7.0]}]
json.dump({"grpo_gemm_tuning": 2, "products": products}, open(a[a.index("--write") + 1], "w"))
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
        self.assertEqual(tune["figure"], "3 products, 2 take another answer than the first (1 of them K split), "
                                         "8 us less a call of each once")
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

    def test_names_the_product_that_splitting_k_serves_best(self):
        answers = [{"us": 12.0, "algo_id": 0, "tile_id": 0, "split_k": 1}]
        rows = [{"precision": "bf16", "op": "forward", "case": "reference rollout", "M": 544, "H": 2048,
                 "first_us": 12.0, "best_us": 12.0, "best_rank": 0, "tflops_best": 380.0, "answers": answers,
                 "splits": [{"split": 2, "us": 8.0}, {"split": 3, "us": 6.0}, {"split": 4, "us": None}]},
                {"precision": "bf16", "op": "forward", "case": "reference loss", "M": 54400, "H": 2048,
                 "first_us": 600.0, "best_us": 600.0, "best_rank": 0, "tflops_best": 760.0, "answers": answers,
                 "splits": [{"split": 2, "us": 650.0}]}]
        check, _ = self.survey(json.dumps({"rows": rows}))
        self.assertEqual(check["status"], "pass", check["figure"])
        self.assertTrue(check["figure"].endswith("; K split, at best: bf16 forward reference rollout in 3 splits "
                                                 "0.50x rank 0's time"), check["figure"])

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



class RolloutPhases(unittest.TestCase):
    """bench_rollout_cuda's JSON to the rollout check: microseconds a step per mode and, for a
    cluster mode, its phase clocks (a stand-in program writes the rows for each preset)."""

    PHASES = {"blocks": 8, "steps": 199, "step_cycles": 12000.0, "sm_clock_mhz": 1980.0,
              "rows": [{"phase": "product", "cycles_block0": 900.0, "cycles_median": 1000.0, "cycles_max": 1200.0,
                        "share": 0.1, "us": 0.6}]}

    def latency(self, rows):
        with tempfile.TemporaryDirectory() as d:
            kit = _kit_with(d, "bench_rollout_cuda", "import sys\nopen(sys.argv[sys.argv.index('--json') + 1], 'w')"
                            ".write(%r)\n" % json.dumps({"rows": rows}))
            checks_speed.rollout_latency(kit)
            return kit.checks, kit.data

    def test_phases_are_kept_per_preset_and_mode(self):
        rows = [{"mode": "eager", "us_per_step": 20.0},
                {"mode": "graph, cluster kernel, bf16 mma", "us_per_step": 6.0, "phases": self.PHASES}]
        checks, data = self.latency(rows)
        self.assertEqual([c["status"] for c in checks], ["pass", "pass"], [c["figure"] for c in checks])
        self.assertEqual(data["rollout_us_per_step"]["small"], {"eager": 20.0, "graph, cluster kernel, bf16 mma": 6.0})
        self.assertEqual(data["rollout_phases"]["small"], {"graph, cluster kernel, bf16 mma": self.PHASES})

    def test_a_placement_is_kept_and_one_without_what_the_report_reads_fails_here(self):
        group = {"clusters": 15, "us_median": 4.5, "us_min": 4.0, "us_max": 5.0}
        where = {"blocks": 136, "sms": 128, "shared_sms": 8, "alone": group, "sharing": dict(group, clusters=2)}
        rows = [{"mode": "graph, cluster kernel", "us_per_step": 6.0, "phases": dict(self.PHASES, placement=where)}]
        checks, data = self.latency(rows)
        self.assertEqual([c["status"] for c in checks], ["pass", "pass"], [c["figure"] for c in checks])
        self.assertEqual(data["rollout_phases"]["small"]["graph, cluster kernel"]["placement"], where)
        broken = dict(where, sharing={"clusters": 2})
        rows[0]["phases"] = dict(self.PHASES, placement=broken)
        checks, data = self.latency(rows)
        self.assertEqual([c["status"] for c in checks], ["fail", "fail"])
        self.assertIn("bad JSON", checks[0]["figure"])
        self.assertEqual(data["rollout_phases"], {})

    def test_a_phase_row_without_what_the_report_reads_fails_here(self):
        broken = dict(self.PHASES, rows=[{"phase": "product", "cycles_block0": 900.0}])
        checks, data = self.latency([{"mode": "graph, cluster kernel", "us_per_step": 6.0, "phases": broken}])
        self.assertEqual([c["status"] for c in checks], ["fail", "fail"])
        self.assertIn("bad JSON", checks[0]["figure"])
        self.assertEqual(data["rollout_phases"], {})


if __name__ == "__main__":
    unittest.main()
