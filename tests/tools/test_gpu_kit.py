"""tools/gpu_kit without a GPU: the parsers on tool output as those tools print it, and the
report on a made-up set of checks."""
import json
import os
import struct
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import kit as kitmod, parse, report  # noqa: E402


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


class Report(unittest.TestCase):
    def test_summary_table_first_and_failures_counted(self):
        with tempfile.TemporaryDirectory() as d:
            kit = kitmod.Kit(ROOT, os.path.join(d, "out"), d, quick=False, dry_run=False, python=sys.executable)
            kit.device["name"] = "Test GPU"
            kit.record("alpha", "pass", "1 thing")
            kit.record("beta | gamma", "fail", "2 things", detail=["FAILED x"])
            kit.not_run("delta", "dry run")
            kit.data["epochs_per_s"] = {"small": 100.0, "reference": None}
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


if __name__ == "__main__":
    unittest.main()
