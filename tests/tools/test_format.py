"""tools/check_format on throwaway git repositories: a planted badly formatted file is named with
its diff while clean and untracked files are not, --fix repairs it, another clang-format version
is skipped outside CI and refused under CI=true, and a folder outside git is bad usage.
Run as `python3 -m tests.tools.test_format` from the repository root: exits 77 (a ctest skip)
when a test could not run here (no clang-format 14)."""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "check_format")
BAD = "int  f( ){return 1;}\n"
GOOD = "int g() { return 2; }\n"


def clang_format_14():
    """The clang-format 14 the script would find, or None."""
    for name in ("clang-format-14", "clang-format"):
        path = shutil.which(name)
        if path:
            out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, text=True).stdout
            m = re.search(r"version (\d+)\.", out)
            return path if m and m.group(1) == "14" else None
    return None


def run(args, cwd=None, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("CI", "CLANG_FORMAT")}
    e.update(env)
    p = subprocess.run([TOOL] + args, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


class Repo:
    """A temporary git repository with the project's .clang-format and the given tracked files."""

    def __init__(self, tracked, untracked=None):
        self.dir = tempfile.mkdtemp()
        shutil.copy(os.path.join(ROOT, ".clang-format"), self.dir)
        for path, text in list(tracked.items()) + list((untracked or {}).items()):
            self.write(path, text)
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        subprocess.run(["git", "-C", self.dir, "add", ".clang-format"] + list(tracked), check=True)

    def write(self, path, text):
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def read(self, path):
        with open(os.path.join(self.dir, path)) as f:
            return f.read()

    def close(self):
        shutil.rmtree(self.dir)


@unittest.skipUnless(shutil.which("git"), "needs git")
class Format(unittest.TestCase):
    def repo(self, tracked, untracked=None):
        r = Repo(tracked, untracked)
        self.addCleanup(r.close)
        return r

    def need_clang_format_14(self):
        if not clang_format_14():
            self.skipTest("needs clang-format 14 (Debian 12: apt-get install clang-format)")

    def test_planted_file_is_named_with_its_diff(self):
        self.need_clang_format_14()
        r = self.repo({"core/clean.h": GOOD, "kernels/bad.cu": BAD, "cli/bad.cpp": BAD},
                      untracked={"scratch/loose.cpp": BAD, "notes.txt": BAD})
        rc, out = run([r.dir])
        self.assertEqual(rc, 1, out)
        self.assertIn("2 file(s) not formatted", out)
        self.assertIn("  kernels/bad.cu\n", out)
        self.assertIn("  cli/bad.cpp\n", out)
        self.assertIn("+int f() { return 1; }", out)  # the diff
        self.assertIn("tools/check_format --fix " + r.dir, out)
        self.assertNotIn("clean.h", out)
        self.assertNotIn("loose.cpp", out)  # untracked files are not the project's

    def test_fix_rewrites_and_then_passes(self):
        self.need_clang_format_14()
        r = self.repo({"a.cpp": BAD, "b.h": GOOD})
        rc, out = run(["--fix", r.dir])
        self.assertEqual(rc, 0, out)
        self.assertIn("reformatted 1 file(s)", out)
        self.assertEqual(r.read("a.cpp"), "int f() { return 1; }\n")
        rc, out = run([r.dir])
        self.assertEqual(rc, 0, out)
        self.assertIn("the 2 C++ and CUDA files git tracks are formatted", out)

    def test_runs_from_anywhere_on_its_root(self):
        self.need_clang_format_14()
        r = self.repo({"x/y.cuh": BAD})
        rc, out = run([os.path.join(r.dir, "x")], cwd=tempfile.gettempdir())
        self.assertEqual(rc, 1, out)
        self.assertIn("  x/y.cuh\n", out)

    def test_other_version_skips_outside_ci_and_fails_in_ci(self):
        fake = os.path.join(tempfile.mkdtemp(), "clang-format")
        self.addCleanup(shutil.rmtree, os.path.dirname(fake))
        with open(fake, "w") as f:
            f.write('#!/bin/sh\necho "Ubuntu clang-format version 18.1.3 (1ubuntu1)"\n')
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        r = self.repo({"a.cpp": BAD})
        rc, out = run([r.dir], CLANG_FORMAT=fake)
        self.assertEqual(rc, 0, out)
        self.assertIn("is clang-format 18, not 14", out)
        self.assertIn("skipping the format check", out)
        rc, out = run([r.dir], CLANG_FORMAT=fake, CI="true")
        self.assertEqual(rc, 1, out)
        self.assertIn("CI needs clang-format 14", out)
        rc, out = run(["--fix", r.dir], CLANG_FORMAT=fake)
        self.assertEqual(rc, 1, out)
        self.assertIn("nothing reformatted", out)
        self.assertEqual(r.read("a.cpp"), BAD)

    def test_bad_usage_exits_2(self):
        outside = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, outside)
        rc, out = run([outside], GIT_CEILING_DIRECTORIES=os.path.dirname(outside))
        self.assertEqual(rc, 2, out)
        self.assertIn("is not a git checkout git can use", out)
        for args in (["--bogus"], [outside, outside], [os.path.join(outside, "missing")]):
            rc, out = run(args)
            self.assertEqual(rc, 2, (args, out))
        rc, out = run([], CLANG_FORMAT=os.path.join(outside, "nothing"))
        self.assertEqual(rc, 2, out)


def main():
    result = unittest.main(argv=[sys.argv[0], "-q"], exit=False).result
    if not result.wasSuccessful():
        return 1
    return 77 if result.skipped else 0


if __name__ == "__main__":
    sys.exit(main())
