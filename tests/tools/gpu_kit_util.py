"""The gpu kit's tests' kits: a Kit over a temporary folder, and one whose build folder holds a
stand-in program (test_gpu_kit.py, test_gpu_kit_speed.py)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import kit as kitmod  # noqa: E402
from tests.tools.stand_in import stand_in  # noqa: E402


def kit(d, dry_run=False, budget=3600):
    return kitmod.Kit(ROOT, os.path.join(d, "out"), d, quick=False, dry_run=dry_run, python=sys.executable,
                      budget=budget)


def kit_with(d, name, script):
    """A kit whose build folder holds the stand-in program `name`."""
    k = kit(d)
    k.build = os.path.join(d, "bin")
    stand_in(k.build, name, script)
    return k
