#!/usr/bin/env python3
"""tools/check_layers.py [ROOT]: every project #include in the product's folders points down the
layer order of docs/design.md ("Layers"), so the layering cannot decay. Prints one line per
include that points up or sideways and exits 1; exits 0 when there is none. tests/, bench/ and
tools/ may include any layer.

A folder may include itself and the layers listed for it, nothing else of ours."""
import os
import re
import sys

# folder -> the project folders its files may include (besides its own)
ALLOWED = {
    "core": set(),
    "cpu": {"core"},
    "kernels": {"core", "cpu"},
    "env": {"core"},
    "engine": {"core", "cpu", "kernels", "env"},
    "cli": {"core", "cpu", "kernels", "env", "engine"},
    "simt": set(),
}
# engine's parts: the generic step, layouts and executor interface (engine/*) include only
# themselves; each executor and the checkpoints add the generic part; the policy player (play)
# runs a checkpoint on the host executor's ops.
SUB = {
    "engine": {"engine"},
    "engine/host": {"engine"},
    "engine/cuda": {"engine"},
    "engine/checkpoint": {"engine"},
    "engine/play": {"engine", "engine/host", "engine/checkpoint"},
}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
SOURCES = (".h", ".cuh", ".cpp", ".cu")


def layer_of(path):
    """The layer a repository-relative path belongs to: engine/host/x.h -> engine/host."""
    parts = path.split("/")
    if parts[0] == "engine" and len(parts) > 2:
        return "engine/" + parts[1]
    return parts[0]


def top(layer):
    return layer.split("/")[0]


def violations(root):
    bad = []
    for folder in ALLOWED:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in sorted(names):
                if not n.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, n), root)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    text = f.read()
                src = layer_of(path)
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    if "/" not in inc:
                        continue  # a sibling file, found beside the includer
                    dst = layer_of(inc)
                    if top(dst) in ("tests", "bench", "tools"):
                        ok = False  # the product never reaches into its tests or benchmarks
                    elif top(dst) not in ALLOWED:
                        continue  # not one of ours (a library's path such as CLI/CLI.hpp)
                    elif top(dst) != top(src):
                        ok = top(dst) in ALLOWED[top(src)]
                    elif top(src) == "engine":
                        ok = dst == src or dst in SUB[src]
                    else:
                        ok = True
                    if not ok:
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append("%s:%d: includes %s (%s may not include %s)" % (path, line, inc, src, dst))
    return bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    bad = violations(root)
    for b in bad:
        print(b)
    if bad:
        print("check_layers: %d include(s) point against the layer order (docs/design.md, Layers)" % len(bad))
        return 1
    print("check_layers: every include in %s points down the layers" % ", ".join(sorted(ALLOWED)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
