"""`locklab demo`: the seed-004 matrix, on this machine, with distributions.

Seed 004 (the 2014 spinning-futex series) reported kops/s for threads {2, 10, 256} x critical-section
load {1, 10, 50, 100} pauses, one number per cell, and lost 24 % at 10 threads / load 1.  The demo runs
the same matrix plus the uncontended cases (1 thread, load 0) for

    lk_mutex, the baselines glibc_normal, glibc_adaptive, futex3, glibc_pi, spin_ttas, and every other
    AVAILABLE registry entry of family "mutex" (peers appear here by being registered, nothing else),

with glibc_normal as the baseline, R repeats per (cell, lock), and writes

    DIR/mutex.json    the results file (its "command" is the equivalent `locklab bench` line)
    DIR/summary.md    per cell: winner; lk_mutex vs the best glibc mutex and vs futex3
    DIR/report/       locklab.report.write_report(), when report support is installed

The duration is chosen from the number of runs so that the whole demo takes about three minutes:
nothing here measures time, the estimate is runs x (warmup + duration + per-process overhead).
"""

import datetime as _dt
import os

from . import runner
from . import stats as st
from . import tables
from .errors import UsageError

WANTED = ["lk_mutex", "glibc_normal", "glibc_adaptive", "futex3", "glibc_pi", "spin_ttas"]
BASELINE = "glibc_normal"
THREADS = [1, 2, 10, 256]
LOADS = [0, 1, 10, 50, 100]
BUDGET_S = 180.0
REPEAT = 4  # the smallest n per side at which Mann-Whitney can reach p < 0.05
WARMUP_S = 0.03
OVERHEAD_S = 0.15  # per driver process: exec, pause calibration, thread start/join (an estimate)
QUICK = {"threads": [1, 2], "load": [10], "locks": 3, "repeat": 2, "duration": 0.02,
         "warmup": 0.0}


def choose_locks(wl, algorithms, quick=False, note=print):
    """The demo's locks in order (wanted ones first, then the other available mutex entries)."""
    lp = wl.lock_param
    if lp is None:
        raise UsageError(f"demo: workload '{wl.name}' has no --lock parameter")
    accepted = {a["name"]: a for a in runner.algs_for(lp, algorithms)}
    names = list(WANTED) + [a["name"] for a in algorithms
                            if a.get("family") == "mutex" and a["name"] not in WANTED]
    locks = []
    for n in names:
        a = accepted.get(n)
        if a is None:
            note(f"demo: skipping {n}: not in this driver's registry")
        elif not a.get("available", True):
            note(f"demo: skipping {n}: {a.get('missing') or 'not available'}")
        else:
            locks.append(n)
    if quick:
        locks = locks[:QUICK["locks"]]
    if not locks:
        raise UsageError("demo: none of the mutex workload's locks is available")
    return locks


def plan_demo(driver, quick=False, note=print):
    """(Plan, duration, warmup) for the demo, validated against the driver's description."""
    wl = driver.workload("mutex")
    algorithms = driver.algorithms()
    locks = choose_locks(wl, algorithms, quick, note)
    threads = QUICK["threads"] if quick else THREADS
    loads = QUICK["load"] if quick else LOADS
    tp, ldp = wl.param("threads"), wl.param("load")
    if tp is None or ldp is None:
        raise UsageError("demo: the mutex workload lacks --threads or --load")
    maxt = int(tp.max) if tp.max is not None else max(threads)
    threads = [t for t in threads if t <= maxt]
    threads = [runner.parse_value(tp, str(t), algorithms, "--threads") for t in threads]
    loads = [runner.parse_value(ldp, str(x), algorithms, "--load") for x in loads]
    repeat = QUICK["repeat"] if quick else REPEAT
    ncells = len(threads) * len(loads)
    runs = ncells * len(locks) * repeat
    if quick:
        duration, warmup = QUICK["duration"], QUICK["warmup"]
    else:
        warmup = WARMUP_S
        duration = BUDGET_S / runs - warmup - OVERHEAD_S
        duration = round(min(0.5, max(0.05, duration)), 3)
    fixed = {}
    dp, wp = wl.param("duration"), wl.param("warmup")
    if dp is not None:
        fixed["duration"] = runner.parse_value(dp, repr(duration), algorithms, "--duration")
    if wp is not None:
        fixed["warmup"] = runner.parse_value(wp, repr(warmup), algorithms, "--warmup")
    axes = {}
    for name, vals in (("threads", threads), ("load", loads)):
        if len(vals) > 1:
            axes[name] = vals
        else:
            fixed[name] = vals[0]
    base = BASELINE if BASELINE in locks else locks[0]
    return runner.Plan(wl, locks, axes, fixed, repeat, baseline=base, shuffle=True, seed=0)


def bench_argv(plan, out):
    """The `locklab bench` argv equivalent to this demo (recorded as the results' command)."""
    argv = ["bench", plan.workload.name, "--lock", ",".join(plan.locks)]
    for k, v in plan.axes.items():
        argv += [f"--{k}", ",".join(runner.arg_text(x) for x in v)]
    for k, v in plan.fixed_args.items():
        argv += [f"--{k}", runner.arg_text(v)]
    argv += ["--repeat", str(plan.repeat), "--baseline", plan.baseline, "--seed", str(plan.seed),
             "--out", out]
    return argv


def _vs(cell, lock, other, hib):
    s = cell["stats"]
    if lock not in s or other not in s:
        return "-"
    c = st.compare_samples(s[lock]["values"], s[other]["values"], hib)
    return (f"{tables.fmt_ratio(c['ratio'])} {tables.fmt_ci(c['ratio_ci95'])} "
            f"p={tables.fmt_p(c['mannwhitney_p'])} **{c['verdict']}**")


def summary_md(doc, notes=()):
    """DIR/summary.md: per cell the winner, lk_mutex vs the best glibc mutex, lk_mutex vs futex3."""
    hib = doc["higher_is_better"]
    m = doc.get("machine", {})
    lines = ["# locklab demo: the seed-004 threads x load matrix", "",
             f"Command: `{doc['command']}`", "",
             f"Machine: {m.get('cpu_model', '?')}, {m.get('online_cpus', '?')} online CPUs, "
             f"kernel {m.get('kernel', '?')}, relax {m.get('relax', '?')} "
             f"({m.get('pause_ns', '?')} ns), created {doc.get('created', '?')}.", "",
             f"Metric: {doc['metric']} ({'higher' if hib else 'lower'} is better), median of "
             f"{doc['runs'] and max(r['repeat'] for r in doc['runs']) + 1} runs per cell and lock; "
             "ratios are median/median with a 95 % bootstrap CI; verdicts need non-overlapping "
             "[min, max] ranges AND Mann-Whitney p < 0.05, otherwise *tied*.", ""]
    lines += [f"- {n}" for n in notes]
    if notes:
        lines.append("")
    lines += ["| threads | load | winner (tied with) | lk_mutex kops/s | best glibc | "
              "lk_mutex / best glibc | futex3 kops/s | lk_mutex / futex3 |",
              "|---:|---:|---|---:|---|---|---:|---|"]
    for cell in doc["cells"]:
        p = dict(doc.get("fixed", {}))
        p.update(cell["params"])
        s = cell["stats"]
        glibc = [n for n in s if n.startswith("glibc_")]
        best = None
        if glibc:
            best = (max if hib else min)(glibc, key=lambda n: s[n]["median"])
        tied = cell.get("winner_tied_with") or []
        win = f"{cell.get('winner')}" + (f" ({', '.join(tied)})" if tied else "")

        def k(n):
            return tables.fmt_num(s[n]["median"] / 1e3) if n in s else "-"
        lines.append(f"| {p.get('threads', '?')} | {p.get('load', '?')} | {win} | {k('lk_mutex')} | "
                     f"{best or '-'} | {_vs(cell, 'lk_mutex', best, hib) if best else '-'} | "
                     f"{k('futex3')} | {_vs(cell, 'lk_mutex', 'futex3', hib)} |")
    lines.append("")
    return "\n".join(lines)


def write_report(json_paths, out_dir, note=print):
    """locklab.report.write_report when engineer h7's module is installed; returns its path or None."""
    try:
        from . import report
        fn = report.write_report
    except (ImportError, AttributeError) as e:
        note(f"demo: no HTML report (report support not installed: {e})")
        return None
    res = fn(json_paths, out_dir)
    return res or out_dir


def run(driver, out_dir=None, quick=False, progress=True, argv=None, note=print):
    """The whole demo; returns the exit status."""
    from .cli import run_plan
    notes = []

    def collect(msg):
        notes.append(msg)
        note(msg)

    plan = plan_demo(driver, quick, collect)
    if out_dir is None:
        ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        out_dir = os.path.join("results", f"demo-{ts}")
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, "mutex.json")
    est = plan.total_runs * (plan.fixed_args.get("duration", 1.0) +
                             plan.fixed_args.get("warmup", 0.1) + OVERHEAD_S)
    note(f"demo: {len(plan.cells)} cells x {len(plan.locks)} locks x {plan.repeat} repeats = "
         f"{plan.total_runs} driver runs, about {est / 60:.1f} minutes")
    doc = run_plan(plan, driver, bench_argv(plan, jpath), jpath, progress=progress)
    doc["invoked_as"] = runner.command_line(argv if argv is not None else ["demo"])
    from .results import dump
    dump(doc, jpath)
    spath = os.path.join(out_dir, "summary.md")
    with open(spath, "w", encoding="utf-8") as f:
        f.write(summary_md(doc, notes))
    print(f"wrote {jpath}")
    print(f"wrote {spath}")
    rpath = write_report([jpath], os.path.join(out_dir, "report"), note)
    if rpath:
        print(f"report: {rpath}")
    return 0
