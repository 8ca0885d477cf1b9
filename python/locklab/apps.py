"""`locklab apps`: real programs on every lock of the LD_PRELOAD shim, with the lab's statistics.

    locklab apps [--apps A,B] [--locks L,M] [--repeat R] [--quick] [--seed N] [--out FILE]
                 [--keep-going] [--list] [--no-progress]

Each app below is one command (plus, for memcached, a server the command drives). For every app,
every lock runs R times; repeats are the outer loop and the locks are shuffled within each repeat
(python/locklab/trials.py). The baseline is glibc (glibc's own mutex, through the shim); `none`
(no shim at all) is a variant too, for the shim's own overhead. Per app and lock: the metric's
median with its bootstrap CI, the ratio against glibc with its CI, Mann-Whitney p, whether the
ranges overlap, the verdict (faster/slower only when they do not overlap and p < 0.05), CPU
seconds per run, and for deterministic programs whether every run's output was byte-identical to
glibc's. Results: a table per app, one line of verdicts, and a JSON file (schema locklab-apps/1).

Exit status: 0; 1 when a program failed on some lock or its output differed from glibc's (the
table says which); 2 for bad arguments. An app whose programs are not installed is skipped and
named (`make deps` installs them: scripts/install-deps).
"""

import datetime as _dt
import json
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from typing import Callable, List

from . import shim
from . import results as results_mod
from . import trials
from .errors import UsageError
from .runner import parse_positive_int, split_list

SCHEMA = "locklab-apps/1"
REPO = shim.REPO
DEFAULT_REPEAT = 5
QUICK_REPEAT = 3
THREADS = 4          # fixed, so that outputs (and their digests) do not depend on the machine


@dataclass
class Ctx:
    workdir: str
    quick: bool
    bench: str = ""  # locklab-bench, for the lab's own workload


@dataclass
class App:
    name: str
    desc: str
    needs: List[str]            # executables
    package: str                # Debian package(s) that provide them ("" = built by this repo)
    make: Callable              # make(ctx) -> trials.Command
    in_quick: bool = True
    prepare: Callable = None    # prepare(ctx): inputs, once per app


def _input_file(ctx, mib):
    """A deterministic, moderately compressible file: text lines and base64 of seeded random bytes."""
    import base64
    import random
    path = os.path.join(ctx.workdir, f"input-{mib}MiB.dat")
    if os.path.exists(path):
        return path
    rng = random.Random(20160622)
    with open(path + ".tmp", "wb") as f:
        written, line = 0, 0
        while written < mib << 20:
            chunk = base64.b64encode(rng.randbytes(1536)) + b"\n"
            text = b"".join(b"line %d: the quick brown fox jumps over the lazy dog %d times\n"
                            % (line + k, (line + k) % 97) for k in range(24))
            line += 24
            f.write(chunk + text)
            written += len(chunk) + len(text)
    os.replace(path + ".tmp", path)
    return path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _python():
    """The system's python3 (a distribution build; a pyenv or venv wrapper would add a shell script)."""
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")


def _lab_ops(text, record):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"locklab-run/1"' in line:
            return float(json.loads(line)["result"]["ops_per_sec"])
    return None


def _total_time_s(regex):
    return trials.Metric(name="total time", unit="s", higher_is_better=False, regex=regex)


def _pigz(ctx):
    src = _input_file(ctx, 2 if ctx.quick else 64)
    return trials.Command("pigz", ["pigz", "-p", str(THREADS), "-n", "-6", "-c", src], deterministic=True)


def _xz(ctx):
    src = _input_file(ctx, 2 if ctx.quick else 64)
    return trials.Command("xz", ["xz", f"-T{THREADS}", "-6", "--block-size=" + ("256KiB" if ctx.quick else "4MiB"),
                                 "-c", src], deterministic=True)


def _zstd(ctx):
    src = _input_file(ctx, 2 if ctx.quick else 64)
    return trials.Command("zstd", ["zstd", f"-T{THREADS}", "-3", "-q", "-B" + ("262144" if ctx.quick else "4194304"),
                                   "-c", src], deterministic=True)


def _sysbench_mutex(ctx):
    return trials.Command("sysbench-mutex", [
        "sysbench", "mutex", f"--threads={THREADS}", "--mutex-num=16",
        f"--mutex-locks={2000 if ctx.quick else 50000}", "--mutex-loops=200", "run"],
        metric=_total_time_s(r"total time:\s+([0-9.]+)s"))


def _sysbench_threads(ctx):
    return trials.Command("sysbench-threads", [
        "sysbench", "threads", f"--threads={2 * THREADS}", "--thread-yields=50", "--thread-locks=4",
        f"--events={1000 if ctx.quick else 20000}", "--time=0", "run"],
        metric=_total_time_s(r"total time:\s+([0-9.]+)s"))


def _memcached(ctx):
    port = _free_port()
    server = ["memcached", "-t", str(THREADS), "-p", str(port), "-l", "127.0.0.1", "-U", "0", "-m", "64"]
    if os.geteuid() == 0:
        server += ["-u", "root"]
    return trials.Command("memcached", [
        "memcslap", f"--servers=127.0.0.1:{port}", f"--concurrency={2 * THREADS}",
        f"--execute-number={2000 if ctx.quick else 50000}"],
        metric=trials.Metric(name="memcslap total time", unit="s", regex=r"Time total:\s+([0-9.]+)"),
        service=trials.Service(server, port))


def _kccachetest(ctx):
    return trials.Command("kccachetest", ["kccachetest", "order", "-th", str(THREADS), "-rnd",
                                          str(20000 if ctx.quick else 500000)])


def _stress_ng(ctx):
    # Time-bounded: with --mutex-ops, stress-ng 0.15's mutex stressor can end its own run before its
    # thread-creation loop marks a thread created. It also sometimes reports "could not create any
    # pthreads ... out of system resources" (exit 3) on this machine with any lock, natively too:
    # such a run is repeated (trials.Command.retry_statuses) and counted as retried.
    return trials.Command("stress-ng", ["stress-ng", "--mutex", "2", "--futex", "2",
                                        "--timeout", "1" if ctx.quick else "10", "--metrics-brief"],
                          metric=trials.Metric(name="mutex bogo ops/s", unit="ops/s", higher_is_better=True,
                                               regex=r"\] mutex\s+\d+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)"),
                          retry_statuses=(3,), retries=3)


def _python_threads(ctx):
    return trials.Command("python-threads", [_python(), str(REPO / "apps" / "py-threads.py"),
                                             "--threads", str(THREADS),
                                             "--items", str(3000 if ctx.quick else 100000)],
                          deterministic=True)


def _cxx_queue(ctx):
    built = REPO / "build" / "locklab-app-cxx-queue"
    exe = str(built) if built.exists() else shutil.which("locklab-app-cxx-queue")
    return trials.Command("cxx-queue", [exe, "--producers", "2", "--consumers", "2",
                                        "--items", str(20000 if ctx.quick else 1000000), "--work", "20"],
                          deterministic=True)


def _lab_mutex(threads):
    def make(ctx):
        return trials.Command(f"lab-mutex-{threads}t", [
            ctx.bench, "mutex", "--lock", "glibc_normal", "--threads", str(threads), "--load", "0",
            "--duration", "0.3" if ctx.quick else "2"],
            metric=trials.Metric(name="ops/s", unit="ops/s", higher_is_better=True, func=_lab_ops))
    return make


APPS = [
    App("pigz", "pigz -p 4: parallel gzip of a generated file (output bytes must match)",
        ["pigz"], "pigz", _pigz),
    App("xz", "xz -T4: multithreaded xz of a generated file (output bytes must match)", ["xz"], "xz-utils", _xz),
    App("zstd", "zstd -T4: multithreaded zstd of a generated file (output bytes must match)",
        ["zstd"], "zstd", _zstd),
    App("sysbench-mutex", "sysbench mutex: 4 threads on 16 mutexes", ["sysbench"], "sysbench", _sysbench_mutex),
    App("sysbench-threads", "sysbench threads: 8 threads, 4 locks, yields inside", ["sysbench"], "sysbench",
        _sysbench_threads),
    App("memcached", "memcached -t 4 on 127.0.0.1 (on the lock) driven by memcslap (not on it)",
        ["memcached", "memcslap"], "memcached libmemcached-tools", _memcached),
    App("kccachetest", "Kyoto Cabinet cache DB test, 4 threads", ["kccachetest"], "kyotocabinet-utils",
        _kccachetest),
    App("stress-ng", "stress-ng --mutex 2 --futex 2 for a fixed time (10 s; 1 s with --quick)", ["stress-ng"],
        "stress-ng", _stress_ng),
    App("python-threads", "threaded Python 3 (the GIL is a pthread mutex and condvar), apps/py-threads.py",
        ["python3"], "python3", _python_threads),
    App("cxx-queue", "our C++ std::mutex/std::condition_variable queue, apps/cxx-queue.cc",
        ["locklab-app-cxx-queue"], "", _cxx_queue),
    App("lab-mutex-1t", "the lab's mutex workload through pthread calls (glibc_normal), 1 thread: the "
        "cost of a lock/unlock pair", ["locklab-bench"], "", _lab_mutex(1), in_quick=False),
    App("lab-mutex-2t", "the lab's mutex workload through pthread calls (glibc_normal), 2 threads",
        ["locklab-bench"], "", _lab_mutex(2), in_quick=False),
]


def app_names():
    return [a.name for a in APPS]


def missing(app):
    """Why the app cannot run here, or None."""
    need = []
    for exe in app.needs:
        if exe == "locklab-app-cxx-queue":
            if not (REPO / "build" / exe).exists() and not shutil.which(exe):
                return "locklab-app-cxx-queue is not built (make build)"
            continue
        if exe == "locklab-bench":
            continue
        if exe == "python3":
            continue
        if not shutil.which(exe):
            need.append(exe)
    if need:
        return (f"not installed: {', '.join(need)} (Debian package {app.package}; `make deps` installs it)"
                if app.package else f"not found: {', '.join(need)}")
    return None


def add_arguments(p):
    p.add_argument("--apps", metavar="A,B", help=f"apps to run (default: all; {', '.join(app_names())})")
    p.add_argument("--locks", metavar="L,M",
                   help="shim locks to run them on (default: every lock the shim supports; `none` = "
                   "no shim; glibc is always the baseline)")
    p.add_argument("--repeat", help=f"runs per app and lock (default {DEFAULT_REPEAT}, {QUICK_REPEAT} with "
                   "--quick; >= 4 per side is needed for Mann-Whitney p < 0.05)")
    p.add_argument("--quick", action="store_true",
                   help="small inputs, glibc/lk_mutex/futex3 by default: a functional check in seconds "
                   "(no conclusions about speed)")
    p.add_argument("--seed", default="0", help="seed of the lock-order shuffle (default 0)")
    p.add_argument("--timeout", default="600", help="seconds one run may take before it is killed "
                   "(default 600)")
    p.add_argument("--out", metavar="FILE", help="results file (default results/apps-<time>.json)")
    p.add_argument("--list", action="store_true", help="list the apps and whether they can run here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _default_out():
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join("results", f"apps-{ts}.json")


def _machine():
    try:
        import subprocess
        res = subprocess.run([shim.find_exec(), "--machine"], capture_output=True, text=True)
        return json.loads(res.stdout).get("machine", {})
    except (OSError, ValueError, UsageError):
        return {}


def _select(ns, preload):
    quick = ns.quick
    if ns.apps:
        names = split_list(ns.apps, "--apps")
        for n in names:
            if n not in app_names():
                raise UsageError(f"--apps: expected one of {', '.join(app_names())}, got '{n}'")
        apps = [a for a in APPS if a.name in names]
    else:
        apps = [a for a in APPS if a.in_quick or not quick]
    supported = shim.supported_locks(preload)
    if ns.locks:
        locks = split_list(ns.locks, "--locks")
        trials.check_variants(locks, preload)
    else:
        locks = ["glibc", "lk_mutex", "futex3"] if quick else list(supported)
    if "glibc" not in locks:
        locks = ["glibc"] + locks     # the baseline of every comparison
    repeat = parse_positive_int(ns.repeat if ns.repeat is not None else
                                str(QUICK_REPEAT if quick else DEFAULT_REPEAT), "--repeat", lo=1, hi=1000)
    seed = parse_positive_int(ns.seed, "--seed", lo=0, hi=2**63 - 1)
    try:
        timeout = float(ns.timeout)
    except ValueError:
        timeout = -1
    if not 0 < timeout <= 86400:
        raise UsageError(f"--timeout: expected a number of seconds in (0, 86400], got '{ns.timeout}'")
    if ns.out is not None and (not ns.out or os.path.isdir(ns.out)):
        raise UsageError(f"--out: expected a file name, got '{ns.out}'")
    return apps, locks, repeat, seed, timeout


def _fmt(x, unit):
    if x is None:
        return "-"
    if unit == "s":
        return shim.fmt_ns(x * 1e9)
    if unit == "ops/s":
        from .tables import fmt_short
        return fmt_short(x)
    return f"{x:.4g} {unit}"


def app_table(res):
    from rich.markup import escape
    from rich.table import Table

    from .tables import fmt_ci, fmt_p, fmt_ratio
    m = res["metric"]
    t = Table(title=escape(f"{res['app']}: {res['desc']} [{m['name']}, "
                           f"{'higher' if m['higher_is_better'] else 'lower'} is better]"),
              title_justify="left")
    for c in ("lock", "runs", "median", "95% CI", "vs glibc", "ratio CI", "p", "verdict", "CPU/run", "output"):
        t.add_column(c, justify="left" if c in ("lock", "verdict", "output") else "right")
    comps = {c["variant"]: c for c in res["comparisons"]}
    bad = {x["variant"] for x in res["identity"]["mismatches"]}
    for v in res["locks"]:
        s = res["stats"].get(v, {})
        c = comps.get(v)
        ok_runs = s.get("n", 0)
        runs = f"{ok_runs}/{s.get('runs', 0)}"
        if not res["deterministic"]:
            out = "-"
        elif not ok_runs:
            out = "?"
        else:
            out = "DIFFERS" if v in bad else "identical"
        verdict = "baseline" if v == res["baseline"] else (c["verdict"] if c else "-")
        if s.get("failed"):
            verdict += f" ({s['failed']} failed)"
        t.add_row(escape(v), runs, _fmt(s.get("median"), m["unit"]),
                  "-" if "ci95" not in s else f"[{_fmt(s['ci95'][0], m['unit'])}, {_fmt(s['ci95'][1], m['unit'])}]",
                  fmt_ratio(c["ratio"]) if c else "-", fmt_ci(c["ratio_ci95"]) if c else "-",
                  fmt_p(c["mannwhitney_p"]) if c else "-", escape(verdict),
                  _fmt(s.get("cpu_s_median"), "s"), out)
    return t


def run_apps(ns, argv, console=None):
    from rich.console import Console

    from .runner import command_line
    from .tables import console as make_console
    preload = shim.find_preload()
    shim.find_exec()
    apps, locks, repeat, seed, timeout = _select(ns, preload)
    con = console or make_console()
    err = make_console(stderr=True)
    out_path = ns.out or _default_out()
    bench = ""
    try:
        from .driver import find_driver
        bench = find_driver()
    except UsageError:
        pass
    runnable, skipped = [], []
    for a in apps:
        why = missing(a)
        if not why and a.name.startswith("lab-") and not bench:
            why = "locklab-bench not found (make build)"
        (skipped if why else runnable).append((a, why))
    for a, why in skipped:
        err.print(f"locklab apps: skipping {a.name}: {why}", markup=False)
    if not runnable:
        raise UsageError("apps: none of the selected apps can run here (see above)")

    workdir = tempfile.mkdtemp(prefix="locklab-apps-")
    results, failures = [], []
    prog = task = None
    total = len(runnable) * len(locks) * repeat
    if not ns.no_progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        console=Console(stderr=True), transient=True)
        prog.start()
        task = prog.add_task("apps", total=total)
    try:
        for a, _ in runnable:
            ctx = Ctx(workdir=workdir, quick=ns.quick, bench=bench)
            if prog:
                prog.update(task, description=f"{a.name}: preparing")
            cmd = a.make(ctx)
            cmd.timeout = timeout

            def tick(t, name=a.name):
                if prog:
                    prog.update(task, description=f"{name} on {t['variant']} #{t['repeat'] + 1}/{repeat}")
                    prog.advance(task)

            ts = trials.run_trials(cmd, locks, repeat, seed=seed, progress=tick, workdir=workdir)
            an = trials.analyse(ts, locks, "glibc", cmd.metric.higher_is_better)
            res = {"app": a.name, "desc": a.desc, "command": cmd.argv,
                   "service": cmd.service.argv if cmd.service else None,
                   "metric": cmd.metric.describe(), "deterministic": cmd.deterministic,
                   "retry_statuses": list(cmd.retry_statuses),
                   "locks": locks, "baseline": "glibc", "runs": ts, **an}
            if not cmd.deterministic:
                res["identity"] = {"reference": None, "checked_runs": 0, "identical": None, "mismatches": []}
            results.append(res)
            for v in locks:
                s = an["stats"][v]
                if s.get("failed"):
                    failures.append(f"{a.name} on {v}: {s['failed']} of {s['runs']} runs failed "
                                    f"({'; '.join(s.get('errors', []))})")
            if cmd.deterministic and res["identity"]["mismatches"]:
                bad = sorted({x["variant"] for x in res["identity"]["mismatches"]})
                failures.append(f"{a.name}: output differs from glibc's on {', '.join(bad)}")
    finally:
        if prog:
            prog.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    doc = {"schema": SCHEMA, "command": command_line(argv),
           "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": _machine(), "quick": bool(ns.quick), "repeat": repeat, "seed": seed,
           "order": {"repeats_outer": True, "shuffle": True, "seed": seed},
           "locks": locks, "baseline": "glibc", "apps": results,
           "skipped": [{"app": a.name, "why": why} for a, why in skipped]}
    results_mod.write_json_atomic(doc, out_path)
    problem = shim.check_format(doc, SCHEMA)   # after writing: the runs are kept either way
    if problem:
        failures.append(f"{out_path} breaks its schema ({SCHEMA}): {problem}")
    for res in results:
        con.print(app_table(res))
        for line in verdict_lines(res):
            con.print("  " + line, markup=False, soft_wrap=True)
        con.print()
    for f in failures:
        err.print(f"locklab apps: {f}", markup=False, soft_wrap=True)
    con.print(f"wrote {out_path}", markup=False)
    return 1 if failures else 0


def verdict_lines(res):
    out = []
    unit = res["metric"]["unit"]
    for c in res["comparisons"]:
        s = res["stats"][c["variant"]]
        b = res["stats"][c["baseline"]]
        lo, hi = c["ratio_ci95"] if c["ratio_ci95"] else (None, None)
        ci = f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""
        ov = "ranges overlap" if c["overlap"] else "ranges do not overlap"
        p = "-" if c["mannwhitney_p"] is None else f"{c['mannwhitney_p']:.3g}"
        out.append(f"{c['variant']}: median {_fmt(s['median'], unit)} vs glibc {_fmt(b['median'], unit)}, "
                   f"ratio {'n/a' if c['ratio'] is None else format(c['ratio'], '.3f')}{ci}, p={p}, {ov}: {c['verdict']}")
    retried = {v: s.get("retried") for v, s in res["stats"].items() if s.get("retried")}
    if retried:
        out.append("runs repeated after the program's own set-up failure (exit status "
                   f"{'/'.join(str(x) for x in res.get('retry_statuses') or [])}): " +
                   ", ".join(f"{v} {n}" for v, n in retried.items()))
    ident = res["identity"]
    if res["deterministic"]:
        if ident["identical"]:
            out.append(f"output: identical in all {ident['checked_runs']} runs "
                       f"(sha256 {str(ident['reference'])[:16]}...)")
        else:
            out.append("output: DIFFERS from glibc's on " +
                       ", ".join(sorted({x['variant'] for x in ident['mismatches']})))
    return out


def print_list(con):
    from rich.markup import escape
    from rich.table import Table
    t = Table(title="locklab apps", title_justify="left")
    for c in ("app", "quick", "runs here", "what"):
        t.add_column(c)
    for a in APPS:
        why = missing(a)
        t.add_row(escape(a.name), "yes" if a.in_quick else "no", "yes" if not why else escape(f"no: {why}"),
                  escape(a.desc))
    con.print(t)


def cmd_apps(ns, argv):
    if ns.list:
        from .tables import console
        print_list(console())
        return 0
    return run_apps(ns, argv)


__all__ = ["APPS", "add_arguments", "cmd_apps", "run_apps", "app_table", "verdict_lines", "missing"]
