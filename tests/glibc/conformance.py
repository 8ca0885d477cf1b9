#!/usr/bin/env python3
"""tests/glibc/conformance.py - glibc's own nptl tests, run on liblocklab-preload.so (`make conformance`).

Builds the tests of tests/glibc/tests.list from Debian's glibc-source tarball against the *installed*
glibc (not a freshly built one), with the part of glibc's support/ library they need compiled from
the same tarball, and runs each test:

    native     no shim: the reference (a test that fails here says nothing about the shim)
    glibc      under the shim with LOCKLAB_LOCK=glibc (every call passed through: the A/B control)
    lk_mutex   under the shim on locklab's mutex (the default)
    futex3     under the shim on a registry lock (the generic path: state, owner and type kept by
               the shim, every lock operation through the lab's lock ops)

plus the lab's own stress tests through the shim (the registry torture test on glibc_normal and
glibc_adaptive, whose pthread calls land in the shim, and locklab-bench's mutual-exclusion-checking
mutex workload). A test passes with exit status 0 and is unsupported with 77 (glibc's test driver
convention); anything else, a timeout included, fails. The run fails (exit 1) when a test that
passes natively fails under any shim mode. Results: a table on stdout, JSON and Markdown files.

    conformance.py [--build DIR] [--preload SO] [--modes a,b] [--only t1,t2] [--jobs N]
                   [--json FILE] [--md FILE] [--timeout-factor N]

Bad input: one line naming the option, exit 2. Needs gcc, g++, and the glibc-source package
(scripts/install-deps installs it).
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_MODES = ["native", "glibc", "lk_mutex", "futex3"]
SUPPORT_SKIP = re.compile(r"^(tst-|test-|links-dso-program|shell-container|echo-container|true-container|"
                          r"test-container|support_quote_blob_main|support_test_compare_string_main|"
                          r"support_path_support_time64|support_socket_so_timestamp_time64|"
                          r"support_descriptors|xclone|support_stack_alloc|support_small_stack_thread_attribute|"
                          r"xreadlink|support_capture_subprocess)")


def die(msg):
    print(f"conformance: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_list(path):
    tests = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        why = raw.split("#", 1)[1].strip() if "#" in raw else ""
        if not line:
            continue
        words = line.split()
        if len(words) < 2 or words[1] not in ("run", "exclude"):
            die(f"{path}:{n}: expected 'NAME run|exclude ...', got '{raw}'")
        t = {"name": words[0], "status": words[1], "why": why, "cflags": [], "ldlibs": [], "args": [], "env": {}}
        for w in words[2:]:
            key, _, val = w.partition("=")
            if key in ("cflags", "ldlibs", "args"):
                t[key] = val.split(",")
            elif key == "env":
                k, _, v = val.partition("=")
                t["env"][k] = v
            else:
                die(f"{path}:{n}: unknown field '{w}'")
        if t["status"] == "exclude" and not why:
            die(f"{path}:{n}: an excluded test needs a '# why'")
        tests.append(t)
    return tests


def glibc_tarball():
    cands = sorted(glob.glob("/usr/src/glibc/glibc-*.tar.xz"))
    if not cands:
        die("no /usr/src/glibc/glibc-*.tar.xz: install the glibc-source package (make deps does)")
    libc = platform.libc_ver()[1]
    for c in cands:
        if re.search(r"glibc-%s\.tar" % re.escape(libc), c):
            return c, libc
    die(f"glibc-source has {', '.join(os.path.basename(c) for c in cands)}, the installed glibc is {libc}: "
        "the tests must come from the installed version")


def extract(tarball, src):
    if (src / ".extracted").exists():
        return
    pats = ("/support/", "/nptl/tst-", "/sysdeps/pthread/tst-", "/test-skeleton.c", "/include/intprops.h",
            "/include/array_length.h")
    with tarfile.open(tarball) as tf:
        for m in tf:
            name = m.name.split("/", 1)[1] if "/" in m.name else ""
            if not name or not any(p in "/" + name for p in pats) or not (m.isfile() or m.isdir()):
                continue
            m.name = name
            tf.extract(m, src)
    (src / ".extracted").write_text(tarball + "\n")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def cflags(build):
    return ["-O1", "-g", "-D_GNU_SOURCE", "-include", str(build / "compat" / "glibc-compat.h"),
            f"-I{build / 'compat'}", f"-I{build / 'inc'}", f"-I{build / 'src' / 'support'}",
            "-Wno-deprecated-declarations", "-w"]


def build_support(build, jobs):
    lib = build / "libsupport.a"
    if lib.exists():
        return lib
    (build / "compat").mkdir(parents=True, exist_ok=True)
    for h in (HERE / "compat").glob("*.h"):
        shutil.copy(h, build / "compat" / h.name)
    for h in ("intprops.h", "array_length.h"):      # glibc's own, standalone (gnulib-style) headers
        shutil.copy(build / "src" / "include" / h, build / "compat" / h)
    (build / "inc").mkdir(exist_ok=True)
    link = build / "inc" / "support"
    if not link.exists():
        link.symlink_to(build / "src" / "support")
    objdir = build / "support-obj"
    objdir.mkdir(exist_ok=True)
    paths = ["-DSRCDIR_PATH=\"%s\"" % (build / "src"), "-DOBJDIR_PATH=\"%s\"" % build,
             "-DOBJDIR_ELF_LDSO_PATH=\"/lib64/ld-linux-x86-64.so.2\"", "-DINSTDIR_PATH=\"/usr\"",
             "-DLIBDIR_PATH=\"/usr/lib\"", "-DBINDIR_PATH=\"/usr/bin\"", "-DSBINDIR_PATH=\"/usr/sbin\"",
             "-DSLIBDIR_PATH=\"/lib\"", "-DROOTSBINDIR_PATH=\"/sbin\"",
             "-DCOMPLOCALEDIR_PATH=\"/usr/lib/locale\""]
    srcs = [p for p in sorted((build / "src" / "support").glob("*.c")) if not SUPPORT_SKIP.match(p.stem)]

    def one(p):
        extra = paths if p.stem == "support_paths" else []
        r = sh(["gcc", "-c", *cflags(build), *extra, str(p), "-o", str(objdir / (p.stem + ".o"))])
        return p.stem, r.returncode, r.stderr
    failed = []
    with cf.ThreadPoolExecutor(jobs) as ex:
        for stem, rc, err in ex.map(one, srcs):
            if rc:
                failed.append(f"{stem}: {err.strip().splitlines()[-1] if err.strip() else rc}")
    if failed:
        die("support/ does not build here:\n  " + "\n  ".join(failed))
    r = sh(["ar", "rcs", str(lib), *map(str, sorted(objdir.glob("*.o")))])
    if r.returncode:
        die(f"ar failed: {r.stderr.strip()}")
    return lib


def source_of(build, name):
    for d in ("sysdeps/pthread", "nptl"):
        for ext in (".c", ".cc"):
            p = build / "src" / d / (name + ext)
            if p.exists():
                return p
    return None


def build_test(build, lib, t):
    src = source_of(build, t["name"])
    if not src:
        return f"no source for {t['name']} in the tarball"
    out = build / "bin" / t["name"]
    if out.exists() and out.stat().st_mtime > src.stat().st_mtime and out.stat().st_mtime > lib.stat().st_mtime:
        return None
    cc = "g++" if src.suffix == ".cc" else "gcc"
    cmd = [cc, *cflags(build), f"-I{src.parent}", f"-I{build / 'src' / 'sysdeps' / 'pthread'}",
           f"-I{build / 'src' / 'nptl'}", *t["cflags"], "-pthread", str(src), str(lib), "-lrt", *t["ldlibs"],
           "-o", str(out)]
    r = sh(cmd)
    if r.returncode:
        lines = [ln for ln in r.stderr.splitlines() if "error" in ln] or r.stderr.splitlines() or ["?"]
        return lines[0][:300]
    return None


def mode_env(mode, preload, base):
    env = {k: v for k, v in base.items() if not k.startswith("LOCKLAB_") and k != "LD_PRELOAD"}
    if mode != "native":
        env["LD_PRELOAD"] = preload
        env["LOCKLAB_LOCK"] = mode
    return env


def run_one(cmd, env, timeout, cwd):
    t0 = time.monotonic()     # for the table only; no verdict depends on it
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                           errors="replace")
        rc = r.returncode
        out = (r.stdout + r.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        rc = None
        out = ((e.stdout or b"") + (e.stderr or b""))[-3000:]
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
    dt = time.monotonic() - t0
    res = "PASS" if rc == 0 else "UNSUPPORTED" if rc == 77 else "TIMEOUT" if rc is None else "FAIL"
    return {"result": res, "status": rc, "seconds": round(dt, 2), "output_tail": out if res in ("FAIL", "TIMEOUT") else ""}


def lab_checks(build_dir):
    """(name, argv, extra env) of the lab's own stress tests that reach the shim through pthread calls."""
    out = []
    stress = build_dir / "test_stress_registry"
    if stress.exists():
        out.append(("lab:test_stress_registry[glibc_normal,glibc_adaptive]", [str(stress)],
                    {"LOCKLAB_STRESS_ONLY": "glibc_normal,glibc_adaptive"}))
    bench = build_dir / "locklab-bench"
    if bench.exists():
        out.append(("lab:locklab-bench mutex --lock glibc_normal --threads 8",
                    [str(bench), "mutex", "--lock", "glibc_normal", "--threads", "8", "--load", "10",
                     "--duration", "0.5"], {}))
    return out


def main():
    ap = argparse.ArgumentParser(prog="conformance.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build" / "glibc-tests"))
    ap.add_argument("--preload", default=str(REPO / "build" / "liblocklab-preload.so"))
    ap.add_argument("--lab-build", default=str(REPO / "build"), help="where test_stress_registry and "
                    "locklab-bench are (default build/)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES))
    ap.add_argument("--only", help="run only these tests (comma list)")
    ap.add_argument("--jobs", default=str(os.cpu_count() or 2))
    ap.add_argument("--timeout-factor", default="4", help="TIMEOUTFACTOR for glibc's test driver (default 4)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the results table (Markdown) here")
    a = ap.parse_args()

    build = Path(a.build).resolve()
    preload = str(Path(a.preload).resolve())
    if not Path(preload).is_file():
        die(f"--preload: no such file '{a.preload}' (run make build)")
    modes = [m for m in a.modes.split(",") if m]
    if not modes or modes[0] != "native":
        die(f"--modes: expected a comma list starting with native, got '{a.modes}'")
    if not re.fullmatch(r"[1-9][0-9]?", a.jobs):
        die(f"--jobs: expected an integer in [1, 99], got '{a.jobs}'")
    if not re.fullmatch(r"[1-9][0-9]?", a.timeout_factor):
        die(f"--timeout-factor: expected an integer in [1, 99], got '{a.timeout_factor}'")
    jobs, tf = int(a.jobs), int(a.timeout_factor)
    tests = parse_list(HERE / "tests.list")
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {t["name"] for t in tests}
        if unknown:
            die(f"--only: not in tests.list: {', '.join(sorted(unknown))}")
        tests = [t for t in tests if t["name"] in want]

    tarball, version = glibc_tarball()
    (build / "src").mkdir(parents=True, exist_ok=True)
    (build / "bin").mkdir(exist_ok=True)
    print(f"conformance: glibc {version} tests from {tarball}, built in {build}", flush=True)
    extract(tarball, build / "src")
    lib = build_support(build, jobs)
    runnable = [t for t in tests if t["status"] == "run"]
    with cf.ThreadPoolExecutor(jobs) as ex:
        errs = dict(zip([t["name"] for t in runnable], ex.map(lambda t: build_test(build, lib, t), runnable)))
    for name, err in errs.items():
        if err:
            print(f"conformance: {name} does not build: {err}", file=sys.stderr)

    # tst-cancel4 and its variants open("Makefile") in the working directory (glibc runs them in its
    # source tree): the runs happen in the build directory, which gets a stand-in
    (build / "Makefile").write_text("# read (not run) by glibc's tst-cancel4 family\n")
    base = dict(os.environ, TIMEOUTFACTOR=str(tf))
    work = []
    for t in runnable:
        if errs.get(t["name"]):
            continue
        exe = str(build / "bin" / t["name"])
        argv = [exe] + [x.replace("@SELF@", exe).replace("%20", " ") for x in t["args"]]
        for m in modes:
            work.append((t["name"], m, argv, {**mode_env(m, preload, base), **t["env"]}))
    for name, argv, extra in lab_checks(Path(a.lab_build).resolve()):
        for m in modes:
            work.append((name, m, argv, {**mode_env(m, preload, base), **extra}))

    results = {}
    t_start = time.monotonic()
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = {ex.submit(run_one, argv, env, 60 * tf + 60, str(build)): (name, m) for name, m, argv, env in work}
        done = 0
        for f in cf.as_completed(futs):
            name, m = futs[f]
            results.setdefault(name, {})[m] = f.result()
            done += 1
            if done % 40 == 0 or done == len(work):
                print(f"conformance: {done}/{len(work)} runs", flush=True)
    wall = time.monotonic() - t_start

    rows, regressions = [], []
    order = [t["name"] for t in tests] + [n for n, _, _ in lab_checks(Path(a.lab_build).resolve())]
    for t in tests:
        if t["status"] == "exclude":
            rows.append({"test": t["name"], "excluded": t["why"]})
        elif errs.get(t["name"]):
            rows.append({"test": t["name"], "build_error": errs[t["name"]]})
            regressions.append(f"{t['name']}: does not build")
    for name in order:
        if name not in results:
            continue
        r = results[name]
        rows.append({"test": name, "modes": r})
        if r["native"]["result"] == "PASS":
            for m in modes[1:]:
                if r[m]["result"] not in ("PASS", "UNSUPPORTED"):
                    regressions.append(f"{name} [{m}]: {r[m]['result']} (status {r[m]['status']})")
    rows.sort(key=lambda x: order.index(x["test"]) if x["test"] in order else 0)

    counts = {m: {} for m in modes}
    for row in rows:
        for m, r in row.get("modes", {}).items():
            counts[m][r["result"]] = counts[m].get(r["result"], 0) + 1
    doc = {"schema": "locklab-conformance/1", "glibc": version, "tarball": os.path.basename(tarball),
           "modes": modes, "timeout_factor": tf, "jobs": jobs, "wall_seconds": round(wall, 1),
           "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()},
           "counts": counts, "regressions": regressions, "tests": rows}
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    table = markdown(doc)
    if a.md:
        Path(a.md).parent.mkdir(parents=True, exist_ok=True)
        Path(a.md).write_text(table)
    print(table)
    for r in regressions:
        print(f"conformance: REGRESSION {r}", file=sys.stderr)
        for row in rows:
            if r.startswith(row["test"]) and "modes" in row:
                for m, res in row["modes"].items():
                    if res["output_tail"] and m != "native":
                        print(f"--- {row['test']} [{m}] output tail:\n{res['output_tail'][-1500:]}", file=sys.stderr)
                break
    return 1 if regressions else 0


def markdown(doc):
    modes = doc["modes"]
    out = [f"| test | {' | '.join(modes)} |", "|---|" + "---|" * len(modes)]
    for row in doc["tests"]:
        if "excluded" in row:
            out.append(f"| {row['test']} | excluded: {row['excluded']} |" + " |" * (len(modes) - 1))
        elif "build_error" in row:
            out.append(f"| {row['test']} | does not build: {row['build_error']} |" + " |" * (len(modes) - 1))
        else:
            cells = []
            for m in modes:
                r = row["modes"][m]
                cells.append(r["result"] if r["result"] != "PASS" else "pass")
            out.append(f"| {row['test']} | {' | '.join(cells)} |")
    out.append("")
    summary = "; ".join(f"{m}: " + ", ".join(f"{k.lower()} {v}" for k, v in sorted(doc['counts'][m].items()))
                        for m in modes)
    out.append(f"Totals - {summary}. Regressions (pass natively, not under the shim): "
               f"{len(doc['regressions'])}. glibc {doc['glibc']}, {doc['machine']['cpus']} CPUs, "
               f"TIMEOUTFACTOR={doc['timeout_factor']}, {doc['jobs']} tests at a time, "
               f"{doc['wall_seconds']} s.")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
