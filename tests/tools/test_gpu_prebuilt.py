"""tools/gpu_kit/prebuilt.py without a GPU: the tree's fingerprint, pack and unpack of small
programs compiled here (their RPATH, ctest's paths, the files' times), and every refusal: another
tree's archive, a folder that holds a build, a program that does not start, a tree that changed
while it built. Needs cc, strip and patchelf (tools/deps installs patchelf)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from gpu_kit import checks_build, prebuilt  # noqa: E402
from tests.tools.gpu_kit_util import kit as _kit  # noqa: E402


def git(tree, *args):
    subprocess.run(["git", "-C", tree] + list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def compile_program(path, rc=0):
    """A small ELF program that prints its name and exits rc."""
    src = path + ".c"
    with open(src, "w") as f:
        f.write('#include <stdio.h>\nint main(void) { puts("%s"); return %d; }\n' % (os.path.basename(path), rc))
    subprocess.run(["cc", "-g", "-O1", "-o", path, src], check=True)
    os.remove(src)


def make_tree(d, grpo_rc=0):
    """A git work tree with a build folder as the gpu flavour leaves one: two programs, a script,
    ctest's files naming the tree's path."""
    tree = os.path.join(d, "tree")
    os.makedirs(os.path.join(tree, "src"))
    with open(os.path.join(tree, "src", "kernel.cu"), "w") as f:
        f.write("// a kernel\n")
    with open(os.path.join(tree, ".gitignore"), "w") as f:
        f.write("/build/\n/.prebuilt/\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree")
    build = os.path.join(tree, "build", "gpu")
    os.makedirs(build)
    compile_program(os.path.join(build, "grpo"), grpo_rc)
    compile_program(os.path.join(build, "bench_epoch"))
    with open(os.path.join(build, "run.sh"), "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(os.path.join(build, "run.sh"), 0o755)
    with open(os.path.join(build, "CTestTestfile.cmake"), "w") as f:
        f.write('include("%s/test_x[1]_include.cmake")\n' % build)
    with open(os.path.join(build, "test_x[1]_include.cmake"), "w") as f:
        f.write('if(EXISTS "%s/test_x")\n  include("%s/test_x[1]_tests.cmake")\nendif()\n' % (build, build))
    with open(os.path.join(build, "test_x[1]_tests.cmake"), "w") as f:
        f.write('add_test([=[X.Y]=] %s/test_x --gtest_filter=X.Y)\n' % build)
    with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
        f.write("# not packed\n")
    return tree, build


def copy_tree(tree, dest):
    """The tree as it travels: its files and .git, no build folder."""
    shutil.copytree(tree, dest, ignore=lambda d, names: ["build", ".prebuilt"] if d == tree else [])
    return dest


def packed(d, grpo_rc=0):
    tree, build = make_tree(d, grpo_rc)
    archive = prebuilt.archive_path(tree)
    manifest = prebuilt.pack(tree, build, archive, lambda: None, log=lambda *_: None)
    return tree, build, archive, manifest


class Tools(unittest.TestCase):
    def test_the_tools_pack_needs(self):
        for tool in ("cc", "strip", "patchelf", "readelf"):
            self.assertIsNotNone(shutil.which(tool), "%s missing (tools/deps installs patchelf)" % tool)


class Fingerprint(unittest.TestCase):
    def test_what_travels_counts_and_what_is_ignored_does_not(self):
        with tempfile.TemporaryDirectory() as d:
            tree, build = make_tree(d)
            first = prebuilt.fingerprint(tree)
            with open(os.path.join(build, "more.o"), "w") as f:
                f.write("ignored")
            self.assertEqual(prebuilt.fingerprint(tree), first)
            with open(os.path.join(tree, "notes.md"), "w") as f:
                f.write("untracked, not ignored: it travels")
            second = prebuilt.fingerprint(tree)
            self.assertNotEqual(second, first)
            with open(os.path.join(tree, "src", "kernel.cu"), "a") as f:
                f.write("// changed\n")
            self.assertNotEqual(prebuilt.fingerprint(tree), second)
            os.remove(os.path.join(tree, "src", "kernel.cu"))
            self.assertNotIn(prebuilt.fingerprint(tree), (first, second))

    def test_a_file_deleted_since_the_index_of_a_lent_machine_counts_for_nothing(self):
        # A lent machine's git index is the session's first commit: a file git rm'd here since is
        # still tracked there, and absent from both trees.
        with tempfile.TemporaryDirectory() as d:
            tree, _ = make_tree(d)
            with open(os.path.join(tree, "src", "old.cu"), "w") as f:
                f.write("// removed later\n")
            git(tree, "add", ".")
            git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "old")
            there = copy_tree(tree, os.path.join(d, "there"))
            git(tree, "rm", "-q", os.path.join("src", "old.cu"))
            os.remove(os.path.join(there, "src", "old.cu"))  # the file travels no more; the index stays
            self.assertEqual(prebuilt.fingerprint(there), prebuilt.fingerprint(tree))
            with open(os.path.join(there, "src", "kernel.cu"), "a") as f:
                f.write("// changed there\n")
            self.assertNotEqual(prebuilt.fingerprint(there), prebuilt.fingerprint(tree))

    def test_a_tree_without_git_is_walked_outside_build(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "t", "build"))
            with open(os.path.join(d, "t", "a.cu"), "w") as f:
                f.write("a")
            first = prebuilt.fingerprint(os.path.join(d, "t"))
            with open(os.path.join(d, "t", "build", "x.o"), "w") as f:
                f.write("x")
            self.assertEqual(prebuilt.fingerprint(os.path.join(d, "t")), first)
            with open(os.path.join(d, "t", "a.cu"), "w") as f:
                f.write("b")
            self.assertNotEqual(prebuilt.fingerprint(os.path.join(d, "t")), first)


class PackAndUnpack(unittest.TestCase):
    def test_round_trip_into_a_tree_at_another_path(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, archive, manifest = packed(d)
            self.assertEqual(manifest["programs"], ["bench_epoch", "grpo"])  # not the script
            self.assertEqual(manifest["build"], os.path.join("build", "gpu"))
            other = copy_tree(tree, os.path.join(d, "elsewhere"))
            build = os.path.join(other, "build", "gpu")
            figure = prebuilt.unpack(other, build, archive)
            self.assertIn("2 programs unpacked", figure)
            self.assertEqual(sorted(os.listdir(build)), sorted(
                ["bench_epoch", "grpo", "CTestTestfile.cmake", "test_x[1]_include.cmake", "test_x[1]_tests.cmake",
                 prebuilt.STAMP]))
            run = subprocess.run([os.path.join(build, "grpo")], stdout=subprocess.PIPE, text=True)
            self.assertEqual((run.returncode, run.stdout.strip()), (0, "grpo"))
            rp = subprocess.run(["patchelf", "--print-rpath", os.path.join(build, "grpo")], stdout=subprocess.PIPE,
                                text=True, check=True).stdout
            self.assertTrue(rp.startswith("$ORIGIN/deps/usr/lib/"), rp)
            dyn = subprocess.run(["readelf", "-d", os.path.join(build, "grpo")], stdout=subprocess.PIPE,
                                 text=True).stdout
            self.assertIn("(RPATH)", dyn)  # DT_RPATH: the bundle's libraries' own needs resolve through it too
            sections = subprocess.run(["readelf", "-S", os.path.join(build, "grpo")], stdout=subprocess.PIPE,
                                      text=True).stdout
            self.assertNotIn(".debug_info", sections)
            for name in ("CTestTestfile.cmake", "test_x[1]_include.cmake", "test_x[1]_tests.cmake"):
                with open(os.path.join(build, name)) as f:
                    text = f.read()
                self.assertIn(build, text)
                self.assertNotIn(tree + "/", text)
                self.assertNotIn(prebuilt.TREE_MARK, text)
            mtime = lambda n: os.path.getmtime(os.path.join(build, n))  # noqa: E731
            self.assertGreater(mtime("test_x[1]_tests.cmake"), mtime("test_x[1]_include.cmake"))
            self.assertGreater(mtime("test_x[1]_include.cmake"), mtime("grpo"))
            self.assertEqual(prebuilt.unpack(other, build, archive), "prebuilt programs already unpacked")

    def test_another_trees_archive_is_refused_and_nothing_is_unpacked(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, archive, _ = packed(d)
            other = copy_tree(tree, os.path.join(d, "elsewhere"))
            with open(os.path.join(other, "src", "kernel.cu"), "a") as f:
                f.write("// one more line\n")
            with self.assertRaisesRegex(prebuilt.Refused, "another tree"):
                prebuilt.unpack(other, os.path.join(other, "build", "gpu"), archive)
            self.assertFalse(os.path.exists(os.path.join(other, "build")))

    def test_a_folder_that_holds_a_build_is_not_overwritten(self):
        with tempfile.TemporaryDirectory() as d:
            tree, build, archive, _ = packed(d)
            before = sorted(os.listdir(build))
            with self.assertRaisesRegex(prebuilt.Refused, "already holds a build"):
                prebuilt.unpack(tree, build, archive)
            self.assertEqual(sorted(os.listdir(build)), before)
            with open(os.path.join(build, "CMakeCache.txt")) as f:
                self.assertEqual(f.read(), "# not packed\n")

    def test_another_build_folder_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, archive, _ = packed(d)
            other = copy_tree(tree, os.path.join(d, "elsewhere"))
            with self.assertRaisesRegex(prebuilt.Refused, "packed from"):
                prebuilt.unpack(other, os.path.join(other, "build", "ab"), archive)

    def test_a_program_that_does_not_start_leaves_no_folder(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, archive, _ = packed(d, grpo_rc=3)
            other = copy_tree(tree, os.path.join(d, "elsewhere"))
            build = os.path.join(other, "build", "gpu")
            with self.assertRaisesRegex(prebuilt.Refused, "does not start here: grpo"):
                prebuilt.unpack(other, build, archive)
            self.assertFalse(os.path.exists(build))

    def test_a_tree_that_changes_while_it_builds_is_not_packed(self):
        with tempfile.TemporaryDirectory() as d:
            tree, build = make_tree(d)
            archive = prebuilt.archive_path(tree)

            def edit():
                with open(os.path.join(tree, "src", "kernel.cu"), "a") as f:
                    f.write("// edited during the build\n")

            with self.assertRaisesRegex(prebuilt.Refused, "changed while it built"):
                prebuilt.pack(tree, build, archive, edit, log=lambda *_: None)
            self.assertFalse(os.path.exists(os.path.dirname(archive)))

    def test_no_archive_is_no_figure(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(prebuilt.try_unpack(d, os.path.join(d, "build", "gpu")), (False, None))


class GpuCheckBuild(unittest.TestCase):
    def test_a_refused_archive_is_noted_and_the_tree_built(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, _, _ = packed(d)
            k = _kit(d)
            k.root, k.build = tree, os.path.join(d, "elsewhere-build")
            with open(os.path.join(tree, "src", "kernel.cu"), "a") as f:
                f.write("// changed after packing\n")
            self.assertFalse(checks_build.use_prebuilt(k))
            self.assertFalse(k.data["prebuilt"]["used"])
            self.assertIn("another tree", k.data["prebuilt"]["why"])
            self.assertEqual(k.checks, [])

    def test_a_matching_archive_is_the_build(self):
        with tempfile.TemporaryDirectory() as d:
            tree, _, archive, _ = packed(d)
            other = copy_tree(tree, os.path.join(d, "elsewhere"))
            os.makedirs(os.path.join(other, ".prebuilt"))
            shutil.copy(archive, prebuilt.archive_path(other))
            k = _kit(d)
            k.root, k.build = other, os.path.join(other, "build", "gpu")
            self.assertTrue(checks_build.use_prebuilt(k))
            self.assertEqual([c["name"] for c in k.checks], ["build (gpu flavour)"])
            self.assertIn("prebuilt at", k.checks[0]["figure"])
            self.assertTrue(k.data["prebuilt"]["used"])


if __name__ == "__main__":
    unittest.main()
