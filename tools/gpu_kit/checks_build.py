"""Device facts, the native-architecture build with warnings as errors, and the test suites."""
import json
import os
import time

from . import parse, prebuilt


def device_facts(kit):
    """nvidia-smi first (it answers even when our build fails), then build/gpu/device_facts_cuda
    for what the CUDA runtime says (SMs, compute capability, L2, runtime version)."""
    q = "name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pci.bus_id"
    res = kit.run.run("nvidia-smi", ["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader,nounits"], 30)
    if res is None:
        return kit.not_run("device", kit.run.why_not)
    if not res.ok:
        return kit.record("device", "fail", "nvidia-smi failed: no GPU answers", res.seconds, res.log)
    try:
        name, driver, mem, sm_clk, mem_clk, bus = parse.csv_row(res.out)[:6]
    except ValueError as e:
        return kit.record("device", "fail", str(e), res.seconds, res.log)
    kit.device.update({"name": name, "driver_version": driver, "memory_mib": parse.number(mem),
                       "max_sm_clock_mhz": parse.number(sm_clk), "max_mem_clock_mhz": parse.number(mem_clk),
                       "pci_bus_id": bus})
    return kit.record("device", "pass", "%s, driver %s, %s MiB" % (name, driver, mem), res.seconds, res.log)


def runtime_facts(kit):
    if not kit.have("device_facts_cuda"):
        return kit.not_run("device runtime facts", "build/gpu/device_facts_cuda missing")
    res = kit.run.run("device-facts", [kit.bin("device_facts_cuda")], 30)
    if res is None:
        return kit.not_run("device runtime facts", kit.run.why_not)
    if not res.ok:
        return kit.from_result("device runtime facts", res, "")
    try:
        facts = json.loads(res.out)
    except ValueError as e:
        return kit.record("device runtime facts", "fail", "bad JSON: %s" % e, res.seconds, res.log)
    kit.device.update(facts)
    return kit.record("device runtime facts", "pass",
                      "cc %s, %s SMs, runtime %s, driver %s" % (facts.get("compute_capability"), facts.get("sms"),
                                                             facts.get("runtime_version"),
                                                             facts.get("driver_version_cuda")),
                      res.seconds, res.log)


def build(kit):
    """tools/build gpu with -DGRPO_WERROR=ON (a register spill or local memory fails it) for the
    GPU in the machine. A dry run (no GPU) keeps every configured setting, so in CI it is the
    incremental no-op after tools/test's own gpu build (which has -DGRPO_WERROR=ON there).
    A failed -Werror build does not cost the lease: it is recorded with every diagnostic (the
    build keeps going past the first), and the tree is built again with warnings allowed so
    that the checks after it still run. Where .prebuilt holds this tree's programs (use_prebuilt)
    nothing is built: they were built here with -DGRPO_WERROR=ON for sm_90."""
    argv = [os.path.join(kit.root, "tools", "build"), "gpu"]
    if kit.dry_run:
        res = kit.run.run("build", argv, 540, needs_gpu=False)
        return kit.from_result("build (gpu flavour)", res, "configured settings kept (dry run)")
    if use_prebuilt(kit):
        return True
    kit.run.env["GRPO_KEEP_GOING"] = "1"
    arch = ["-DCMAKE_CUDA_ARCHITECTURES=native"]
    res = kit.run.run("build", argv + ["-DGRPO_WERROR=ON"] + arch, 540, needs_gpu=False)
    if res is None:
        return kit.not_run("build (gpu flavour)", kit.run.why_not)
    if res.ok:
        return kit.record("build (gpu flavour)", "pass", "built in %.0f s, native arch, -DGRPO_WERROR=ON"
                          % res.seconds, res.seconds, res.log)
    found = parse.diagnostics(res.out)
    kit.record("build (gpu flavour)", "fail",
               "timed out" if res.timed_out else "%d diagnostics with -DGRPO_WERROR=ON%s"
               % (len(found), (": " + found[0]) if found else ""), res.seconds, res.log,
               detail=found[:40] or None)
    res = kit.run.run("build-warnings-allowed", argv + ["-DGRPO_WERROR=OFF"] + arch, 540, needs_gpu=False)
    return kit.from_result("build again, warnings allowed", res, "built in %.0f s" % res.seconds if res else "")


def use_prebuilt(kit):
    """The programs packed here by tools/gpu_prebuilt (.prebuilt/, carried with the call) in place
    of the build, where they were built from this very tree and start on this machine; else the
    tree is built as before, the reason in the report's data. No archive: nothing said."""
    t0 = time.monotonic()
    used, figure = prebuilt.try_unpack(kit.root, kit.build)
    if figure is None:
        return False
    if not used:
        kit.data["prebuilt"] = {"used": False, "why": figure}
        print("[NOTE] %s: building" % figure, flush=True)
        return False
    kit.data["prebuilt"] = {"used": True, "manifest": prebuilt.read_manifest(prebuilt.archive_path(kit.root))}
    return kit.record("build (gpu flavour)", "pass", figure, time.monotonic() - t0)


def binaries(kit, names):
    """Every program the later steps call exists: catches a renamed target in a dry run."""
    missing = [n for n in names if not kit.have(n)]
    script = os.path.join(kit.root, "bench", "torch_baseline.py")
    if not os.path.exists(script):
        missing.append("bench/torch_baseline.py")
    if missing:
        return kit.record("programs present", "fail", "missing: " + ", ".join(missing))
    return kit.record("programs present", "pass", "%d programs" % (len(names) + 1))


def ctest(kit, name, label_args, timeout, skips_fail=True):
    """One ctest run over build/gpu. With skips_fail (the *_cuda tests, which skip only when no
    device answers) a skipped test on a GPU machine is a failure; the host tests may skip where
    the machine lacks something (a mount namespace, a Python with torch), and their skips are
    named in the check's detail. Each test gets 120 s, so one that hangs fails alone instead of
    taking the step's whole time limit with it."""
    if not kit.have("grpo"):
        return kit.not_run(name, "the build failed")
    junit = os.path.join(kit.tmp("ctest"), name.replace(" ", "-") + ".xml")
    jobs = str(min(os.cpu_count() or 2, 16))
    argv = ["ctest", "--test-dir", kit.build, "-j", jobs, "--timeout", "120", "--output-on-failure",
            "--no-tests=error", "--output-junit", junit] + label_args
    res = kit.run.run(name.replace(" ", "-"), argv, timeout)
    if res is None:
        return kit.not_run(name, kit.run.why_not)
    try:
        passed, failed, skipped, bad = parse.junit_counts(junit)
    except (OSError, ValueError) as e:
        return kit.record(name, "fail", "no JUnit result (%s); exit %d" % (e, res.rc), res.seconds, res.log)
    figure = "%d passed, %d failed, %d skipped" % (passed, failed, skipped)
    status = "pass" if res.ok and failed == 0 and (skipped == 0 or not skips_fail) and passed > 0 else "fail"
    return kit.record(name, status, figure, res.seconds, res.log, detail=bad[:40] or None)
