"""The gpu flavour's programs built here and carried to a lent GPU machine packed, so that its
calls spend their device time measuring rather than compiling: every call starts a bare machine,
and the build took ~1.5 min of gpu_check's ~5 there (gpu_ab builds two trees, profile_ncu one).

pack (here, tools/gpu_prebuilt pack): builds the tree's gpu flavour for sm_90 (H100 and H200)
with -DGRPO_WERROR=ON, then packs its programs (debug sections stripped, each with an RPATH to
the dependency bundle's libraries beside it, $ORIGIN/deps) and ctest's files into one archive,
with a manifest naming the tree's fingerprint: every file that travels to the lent machine
(tracked, and untracked but not ignored), by content.

unpack (there, by gpu_check, gpu_ab and profile_ncu before they build): only into a folder that
holds no build, only for a tree with the manifest's fingerprint, and only if the unpacked grpo
starts there (libraries found); else the folder is removed again and the caller builds, as
before. Nothing here needs a GPU."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time

MANIFEST = "prebuilt.json"
STAMP = ".prebuilt"  # in an unpacked build folder: the fingerprint it holds programs for
TREE_MARK = "@GRPO_TREE@"  # the tree's path in ctest's files, packed
ARCH = "90"
ELF = b"\x7fELF"


class Refused(Exception):
    """A reason the archive was not packed or not used: one line."""


def archive_path(tree):
    return os.path.join(tree, ".prebuilt", "gpu.tar.xz")


def tree_files(tree):
    """The tree's files as they travel to a lent machine: tracked, and untracked but not ignored
    (git ls-files); a tree that is no git work tree (gpu_ab's base, from git archive): every file
    outside build/."""
    if os.path.exists(os.path.join(tree, ".git")):
        out = subprocess.run(["git", "-C", tree, "ls-files", "-z", "-co", "--exclude-standard"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
        return sorted({p.decode() for p in out.split(b"\0") if p})
    found = []
    for d, dirs, files in os.walk(tree):
        if d == tree:
            dirs[:] = [x for x in dirs if x != "build"]
        found += [os.path.relpath(os.path.join(d, f), tree) for f in files]
    return sorted(found)


def fingerprint(tree):
    """sha256 over each file's path and content (a link: its target), so that a prebuilt archive
    matches only the very sources it was built from. A path git lists that is not there counts
    for nothing: a lent machine's git index is the session's first commit, so a file deleted since
    is listed there and not here, and the trees are the same."""
    h = hashlib.sha256()
    for rel in tree_files(tree):
        path = os.path.join(tree, rel)
        if not os.path.lexists(path):
            continue
        h.update(rel.encode() + b"\0")
        if os.path.islink(path):
            h.update(b"L" + os.readlink(path).encode())
        elif os.path.isfile(path):
            with open(path, "rb") as f:
                h.update(b"F" + hashlib.sha256(f.read()).digest())
        else:
            h.update(b"-")
    return h.hexdigest()


def programs(build):
    """The build folder's programs: its top-level executable ELF files."""
    out = []
    for name in sorted(os.listdir(build)):
        path = os.path.join(build, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            with open(path, "rb") as f:
                if f.read(4) == ELF:
                    out.append(name)
    return out


def ctest_files(build):
    return sorted(n for n in os.listdir(build)
                  if n == "CTestTestfile.cmake" or n.endswith("]_include.cmake") or n.endswith("]_tests.cmake"))


def multiarch():
    r = subprocess.run(["gcc", "-dumpmachine"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or "x86_64-linux-gnu"


def rpath():
    """The bundle's libraries first (tools/deps --unpack into the build folder's deps/, as
    tools/build does), then the CUDA toolkit's usual places. DT_RPATH, as CMakeLists.txt's bundle
    build: libopenblas's own libgfortran resolves through it too."""
    lib = "$ORIGIN/deps/usr/lib/" + multiarch()
    return ":".join([lib + "/openblas-pthread", lib, "/usr/local/cuda/lib64", "/usr/local/cuda/lib"])


def version_line(argv, word):
    """The first line of `argv`'s output that holds `word` (nvcc: "release 13.0"), else "unknown"."""
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError:
        return "unknown"
    return next((ln.strip() for ln in r.stdout.splitlines() if word in ln), "unknown")


def describe(tree):
    """The tree's commit, with "+changes" where files differ from it (a git work tree only)."""
    if not os.path.exists(os.path.join(tree, ".git")):
        return None
    git = lambda *a: subprocess.run(["git", "-C", tree] + list(a), stdout=subprocess.PIPE,  # noqa: E731
                                    stderr=subprocess.DEVNULL, text=True).stdout.strip()
    commit = git("rev-parse", "HEAD")
    return (commit + "+changes" if git("status", "--porcelain") else commit) or None


def nvcc_version():
    line = version_line(["nvcc", "--version"], "release")  # "Cuda compilation tools, release 13.0, V13.0.88"
    m = re.search(r"V(\d+(\.\d+)+)", line)
    return "nvcc " + m.group(1) if m else "nvcc " + line


def pack(tree, build, archive, builder, werror=True, commit=None, log=print):
    """builder() builds `build` from `tree` (raising Refused on failure; werror: whether it
    builds with -DGRPO_WERROR=ON); then the archive is written whole or not at all. commit: what
    the manifest calls the tree (default: describe()). Returns the manifest."""
    for tool in ("strip", "patchelf"):
        if shutil.which(tool) is None:
            raise Refused("%s not found (tools/deps installs it): nothing packed" % tool)
    before = fingerprint(tree)
    builder()
    if fingerprint(tree) != before:
        raise Refused("the tree changed while it built: nothing packed")
    names = programs(build)
    if not names:
        raise Refused("%s holds no programs: nothing packed" % build)
    if os.path.exists(os.path.join(build, "CTestTestfile.cmake")):
        # The tests' lists (gtest_discover_tests' PRE_TEST mode writes them at ctest's first
        # run): written here, so that ctest there does not run the discovery with this
        # machine's CMake module paths.
        r = subprocess.run(["ctest", "--test-dir", build, "-N"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode != 0:
            raise Refused("ctest -N failed in %s: %s" % (build, (r.stdout.strip().splitlines() or ["?"])[-1]))
    manifest = {"fingerprint": before, "commit": commit or describe(tree), "tree": os.path.abspath(tree),
                "programs": names, "arch": "sm_" + ARCH, "werror": werror,
                "build": os.path.relpath(build, tree), "nvcc": nvcc_version(),
                "cxx": version_line(["c++", "--version"], "++"),
                "packed": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    with tempfile.TemporaryDirectory() as stage:
        for name in names:
            dst = os.path.join(stage, name)
            subprocess.run(["strip", "--strip-debug", "-o", dst, os.path.join(build, name)], check=True)
            subprocess.run(["patchelf", "--force-rpath", "--set-rpath", rpath(), dst], check=True)
        for name in ctest_files(build):
            with open(os.path.join(build, name)) as f:
                text = f.read()
            with open(os.path.join(stage, name), "w") as f:
                f.write(text.replace(os.path.abspath(tree), TREE_MARK))
        with open(os.path.join(stage, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1)
        os.makedirs(os.path.dirname(archive), exist_ok=True)
        part = archive + ".part"
        with tarfile.open(part, "w:xz") as t:
            t.add(os.path.join(stage, MANIFEST), MANIFEST)  # first: unpack reads it before the rest
            for name in sorted(os.listdir(stage)):
                if name != MANIFEST:
                    t.add(os.path.join(stage, name), name)
        os.replace(part, archive)
    log("gpu_prebuilt: %d programs of %s into %s (%.1f MB)" % (len(names), short(manifest), archive,
                                                              os.path.getsize(archive) / 1e6))
    return manifest


def short(manifest):
    c = manifest.get("commit") or "?"
    return c[:10] + ("+changes" if c.endswith("+changes") else "")


def read_manifest(archive):
    with tarfile.open(archive, "r:xz") as t:
        f = t.extractfile(MANIFEST)
        if f is None:
            raise Refused("%s has no %s" % (archive, MANIFEST))
        return json.load(f)


def unpack(tree, build, archive, deps=None):
    """The archive's programs into `build` for `tree` (an absent build folder, or one this very
    archive filled before; the folder it was packed from, relative to the tree). Returns a
    one-line figure for the report; raises Refused with the reason, leaving no half-unpacked
    folder behind."""
    if not os.path.exists(archive):
        raise Refused("no %s" % os.path.relpath(archive, tree))
    try:
        manifest = read_manifest(archive)
    except (OSError, tarfile.TarError, KeyError, ValueError) as e:
        raise Refused("%s unreadable: %s" % (archive, e))
    if manifest.get("fingerprint") != fingerprint(tree):
        raise Refused("packed for another tree (%s, packed %s): the sources differ" % (
            short(manifest), manifest.get("packed")))
    if manifest.get("build") != os.path.relpath(build, tree):
        raise Refused("packed from %s, not %s" % (manifest.get("build"), os.path.relpath(build, tree)))
    stamp = os.path.join(build, STAMP)
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == manifest["fingerprint"]:
                return "prebuilt programs already unpacked"
    if os.path.exists(build) and os.listdir(build):
        raise Refused("%s already holds a build: not overwritten" % build)
    t0 = time.monotonic()
    try:
        os.makedirs(build, exist_ok=True)
        with tarfile.open(archive, "r:xz") as t:
            members = [m for m in t.getmembers() if m.isfile() and "/" not in m.name and m.name != MANIFEST]
            for m in members:
                try:
                    t.extract(m, build, filter="data")
                except TypeError:  # a Python without extraction filters (before 3.11.4)
                    t.extract(m, build)
        if deps:
            r = subprocess.run([os.path.join(tree, "tools", "deps"), "--unpack", deps, os.path.join(build, "deps")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise Refused("the bundle %s did not unpack: %s" % (deps, r.stdout.strip().splitlines()[-1:]))
        # ctest's files name the tree's path; a discovered tests file newer than its program and
        # its include file is read as it is (else ctest would run the discovery again).
        now = time.time()
        for name in manifest["programs"]:
            os.utime(os.path.join(build, name), (now - 2, now - 2))
        for stage, suffix in ((1, "]_include.cmake"), (1, "CTestTestfile.cmake"), (0, "]_tests.cmake")):
            for name in [m.name for m in members if m.name.endswith(suffix)]:
                path = os.path.join(build, name)
                with open(path) as f:
                    text = f.read().replace(TREE_MARK, os.path.abspath(tree))
                with open(path, "w") as f:
                    f.write(text)
                os.utime(path, (now - stage, now - stage))
        # A program's start finds every library it needs or fails: grpo's, or a bench's --help.
        smoke = ["grpo", "--version"] if "grpo" in manifest["programs"] else [manifest["programs"][0], "--help"]
        r = subprocess.run([os.path.join(build, smoke[0])] + smoke[1:], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        if r.returncode != 0:
            first = (r.stdout.strip().splitlines() or ["exit %d" % r.returncode])[0]
            raise Refused("the prebuilt %s does not start here: %s" % (smoke[0], first))
    except Refused:
        shutil.rmtree(build, ignore_errors=True)
        raise
    except (OSError, tarfile.TarError, subprocess.SubprocessError) as e:
        shutil.rmtree(build, ignore_errors=True)
        raise Refused("unpacking failed: %s" % e)
    with open(stamp, "w") as f:
        f.write(manifest["fingerprint"] + "\n")
    return "prebuilt at %s, packed %s (%s, %s%s); %d programs unpacked in %.0f s" % (
        short(manifest), manifest.get("packed"), manifest.get("nvcc"), manifest.get("arch"),
        ", -DGRPO_WERROR=ON" if manifest.get("werror") else "", len(manifest["programs"]), time.monotonic() - t0)


def try_unpack(tree, build, archive=None, deps=None):
    """(True, unpack's figure), (False, why not), or (False, None) where there is no archive: for
    the tools that build only when this fails. deps: the bundle, by default GRPO_DEPS."""
    archive = archive or archive_path(tree)
    if not os.path.exists(archive):
        return False, None
    deps = deps or os.environ.get("GRPO_DEPS")
    try:
        return True, unpack(tree, build, archive, os.path.abspath(deps) if deps else None)
    except Refused as e:
        return False, "prebuilt programs not used (%s)" % e
