"""tools/check_layers.py: the repository passes, and planted includes that point up, sideways,
into tests/ or between the engine's executors are each reported with their file and line."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "check_layers.py")


def check(root):
    p = subprocess.run([sys.executable, TOOL, root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


class Layers(unittest.TestCase):
    def test_repository_points_down(self):
        rc, out = check(ROOT)
        self.assertEqual(rc, 0, out)

    def test_planted_violations_are_reported(self):
        tmp = tempfile.mkdtemp()
        try:
            files = {
                "core/a.h": '#include "core/b.h"\n#include <vector>\n#include "engine/step.h"\n',
                "env/games.h": '#include "kernels/gelu.h"\n#include "core/rng.h"\n',
                "kernels/x.cu": '#include "cpu/parallel.h"\n\n#include "tests/test_util.h"\n',
                "engine/host/ops.cpp": '#include "engine/ops.h"\n#include "engine/cuda/ops.h"\n',
                "engine/play/p.cpp": '#include "engine/host/ops.h"\n#include "engine/checkpoint/io.h"\n',
                "cli/main.cpp": '#include "engine/trainer.h"\n#include "CLI/CLI.hpp"\n',
            }
            for path, text in files.items():
                os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            rc, out = check(tmp)
            self.assertEqual(rc, 1, out)
            self.assertIn("core/a.h:3: includes engine/step.h", out)
            self.assertIn("env/games.h:1: includes kernels/gelu.h", out)
            self.assertIn("kernels/x.cu:3: includes tests/test_util.h", out)
            self.assertIn("engine/host/ops.cpp:2: includes engine/cuda/ops.h", out)
            self.assertIn("4 include(s)", out)  # and nothing else: the allowed ones pass
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
