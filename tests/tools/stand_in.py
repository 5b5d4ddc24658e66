"""Stand-in programs for the tools' tests: an executable Python script where the tool expects a
program (nvidia-smi, ncu, ctest, compute-sanitizer, the engine's binaries)."""
import os
import sys


def stand_in(folder, name, script):
    """An executable Python script `name` in `folder` (made if absent)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!%s\n%s" % (sys.executable, script))
    os.chmod(path, 0o755)
