"""tools/sass_count without nvcc or the disassembler: its reading of nvdisasm's output (which
instruction belongs to which kernel and inline chain), the charging of instructions to a file's
lines, and its refusals of bad arguments."""
import os
import random
import subprocess
import sys
import unittest

from tests.tools.tool_module import load_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "sass_count")

sc = load_tool("sass_count")
OPS = ["FFMA", "IMAD.WIDE.U32", "LDG.E.128", "ISETP.GE.AND", "BRA", "MUFU.EX2", "BAR.SYNC.DEFER_BLOCKING"]


def frame(path, line, caller=None):
    s = f'\t//## File "{path}", line {line}'
    return s + (f' inlined at "{caller[0]}", line {caller[1]}' if caller else "")


def listing(kernels, rng):
    """nvdisasm -c -gi's shape: per kernel a .text section; before an instruction whose place
    changes, its inline chain innermost first, one line a frame. Returns the text and, per kernel,
    the (opcode, chain) it holds."""
    out, want = [], {}
    for name, n in kernels:
        out.append(f"\t.section\t.text.{name},\"ax\",@progbits\n\t.text.{name}:")
        want[name] = []
        addr = 0
        chain = None
        for _ in range(n):
            if chain is None or rng.random() < 0.4:
                depth = rng.randint(1, 3)
                files = [("/r/./kernels/gelu.h", rng.randint(1, 40)), ("/r/./engine/cuda/block.cuh", rng.randint(50, 90)),
                         ("/r/./engine/cuda/block.cuh", rng.randint(100, 140)), ("/r/engine/cuda/step.cu", 27)]
                chain = files[3 - depth:]
                for i, (p, ln) in enumerate(chain):
                    caller = chain[i + 1] if i + 1 < len(chain) else None
                    out.append(frame(p, ln, caller))
            op = rng.choice(OPS)
            pred = rng.choice(["", "@P0 ", "@!P3 ", "@!UP1 "])
            out.append(f"        /*{addr:04x}*/                   {pred}{op} R1, R2, R3 ;")
            want[name].append((op.split(".")[0], [(os.path.normpath(p), ln) for p, ln in chain]))
            addr += 16
        out.append("\t.section\t.nv.info,\"\",@\"SHT_CUDA_INFO\"")
    return "\n".join(out) + "\n", want


class Parse(unittest.TestCase):
    def test_every_instruction_with_its_kernel_and_chain(self):
        seed = random.randrange(2**32)
        rng = random.Random(seed)
        kernels = [(f"_Z{rng.randint(3, 9)}kernel{i}v", rng.randint(20, 200)) for i in range(3)]
        text, want = listing(kernels, rng)
        got = sc.parse(text)
        self.assertEqual(set(got), set(want), f"seed {seed}")
        for name in want:
            self.assertEqual(got[name], want[name], f"seed {seed}")

    def test_per_line_charges_the_outermost_frame_of_the_file(self):
        gelu, block, step, other = "/r/kernels/gelu.h", "/r/engine/block.cuh", "/r/engine/step.cu", "/x/block.cuh"
        ins = [("FFMA", [(gelu, 5), (block, 60), (block, 120), (step, 27)]),
               ("IMAD", [(block, 61), (step, 27)]),
               ("LDG", [(other, 7), (step, 30)])]
        self.assertEqual(sc.per_line(ins, block), {120: 1, 61: 1, None: 1})
        # Within 50-100 the caller on line 120 is left out: the function's own lines take them.
        self.assertEqual(sc.per_line(ins, block, (50, 100)), {60: 1, 61: 1, None: 1})
        self.assertEqual(sc.per_line(ins, gelu), {5: 1, None: 2})
        # A file of the same name elsewhere is another file.
        self.assertEqual(sc.per_line(ins, other), {7: 1, None: 2})

    def test_fp_ops_per_line_are_the_float_adds_multiplies_and_fmas_per_line_charges(self):
        seed = random.randrange(2**32)
        rng = random.Random(seed)
        block = os.path.normpath("/r/./engine/cuda/block.cuh")
        text, want = listing([("_Z1kv", 300)], rng)
        ins = sc.parse(text)["_Z1kv"]
        got = sc.per_line_fp(ins, block)
        lines = sc.per_line(ins, block)
        for ln, ops in got.items():
            self.assertLessEqual(sum(ops.values()), lines[ln], f"seed {seed}")
            self.assertEqual(set(ops) - {"FADD", "FMUL", "FFMA"}, set(), f"seed {seed}")
        ffma = sum(1 for op, chain in want["_Z1kv"] if op == "FFMA" and any(f == block for f, _ in chain))
        self.assertEqual(sum(ops["FFMA"] for ops in got.values()), ffma, f"seed {seed}")
        # An FMUL and an FADD are not an FFMA: a fused product shows as one FFMA on its line.
        mixed = [("FMUL", [(block, 7)]), ("FADD", [(block, 7)]), ("FFMA", [(block, 8)]), ("IMAD", [(block, 8)])]
        self.assertEqual(sc.per_line_fp(mixed, block), {7: {"FMUL": 1, "FADD": 1}, 8: {"FFMA": 1}})

    def test_paths_as_nvcc_wrote_them(self):
        text = "\n".join(["\t.headerflags\t@\"EF_CUDA_SM90\"", "\t.text._Z1kv:", '\t//## File "/r/./engine/../engine/block.cuh", line 9',
                          "        /*0000*/                   FFMA R1, R2, R3, R4 ;"])
        self.assertEqual(sc.parse(text), {"_Z1kv": [("FFMA", [("/r/engine/block.cuh", 9)])]})


class Refusals(unittest.TestCase):
    def run_tool(self, args):
        return subprocess.run([sys.executable, TOOL] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60, cwd=ROOT)

    def test_bad_arguments_get_one_line_and_exit_2(self):
        # Each is refused before nvcc runs.
        source = "engine/cuda/rollout_step.cu"
        for args, says in ((["no/such/file.cu"], "no file no/such/file.cu"),
                           ([source, "--kernel", "("], "missing ), unterminated subpattern"),
                           ([source, "--within", "5-9"], "--within takes LO-HI (LO <= HI) with --lines"),
                           ([source, "--lines", "gelu.h", "--within", "9-5"], "--within takes LO-HI"),
                           ([source, "--lines", "no_such_file.cuh"], "--lines: no files named no_such_file.cuh"),
                           ([source, "--fp"], "--fp counts per line: it needs --lines")):
            p = self.run_tool(args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("sass_count: "), p.stderr)
            self.assertIn(says, p.stderr)
            self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
