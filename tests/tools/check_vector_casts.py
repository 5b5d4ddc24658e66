"""No raw reinterpret_cast to a CUDA vector type (float4, uint2, ...) in the project's CUDA
sources: every vector access goes through grpo::vector_at (core/vector_access.h), where the
emulator checks the alignment a GPU enforces (g++ splits a raw one into scalar accesses, which
the emulator's memory checks see as aligned). Run as a unittest module (ctest tools.vector_casts);
`python3 tests/tools/check_vector_casts.py` lists the offenders."""
import os
import re
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ("core", "cpu", "engine", "env", "kernels", "bench", "tests")
VECTOR = r"(?:char|uchar|short|ushort|int|uint|long|ulong|longlong|ulonglong|float|double)[1-4]"
RAW = re.compile(r"reinterpret_cast\s*<\s*(?:const\s+)?(?:volatile\s+)?" + VECTOR + r"\s*(?:const\s*)?\*")


def raw_vector_casts(root, folders=FOLDERS):
    """(path relative to root, line number, line) of every raw vector cast in .cu and .cuh files,
    tests/simt (the emulator's own self-tests and planted bugs) left out."""
    found = []
    for folder in folders:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir.startswith(os.path.join("tests", "simt")):
                continue
            for name in sorted(files):
                if not name.endswith((".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if RAW.search(line):
                            found.append((os.path.relpath(path, root), number, line.strip()))
    return found


class VectorCasts(unittest.TestCase):
    def test_the_tree_has_none(self):
        found = raw_vector_casts(ROOT)
        self.assertEqual(found, [], "use grpo::vector_at (core/vector_access.h): %s" % found)

    def test_a_planted_cast_is_found_and_vector_at_is_not(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "kernels"))
            with open(os.path.join(d, "kernels", "k.cu"), "w") as f:
                f.write("const float4 a = *reinterpret_cast<const float4*>(p);\n"
                        "uint2 b = *grpo::vector_at<uint2>(q);\n"
                        "auto c = reinterpret_cast< float2 *>(r);\n"
                        "auto d = reinterpret_cast<const float*>(s);\n")
            found = raw_vector_casts(d, ("kernels",))
        self.assertEqual([(p, n) for p, n, _ in found], [(os.path.join("kernels", "k.cu"), 1),
                                                        (os.path.join("kernels", "k.cu"), 3)])


if __name__ == "__main__":
    if len(sys.argv) == 1 and raw_vector_casts(ROOT):
        for p, n, line in raw_vector_casts(ROOT):
            print("%s:%d: %s" % (p, n, line))
        sys.exit(1)
    unittest.main()
