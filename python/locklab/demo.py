"""`locklab demo`: does lk_mutex beat the locks programs use, where seed 004 says it should?

Three minutes on 2 cores buy about 180 driver runs.  Spread over the whole seed-004 matrix (20 cells x
9 locks) that is 0.07 s a run and every comparison comes out "tied"; so the demo measures few cells,
long enough for the ranges to separate, against the locks that matter:

    cells   threads {2, 10, 256} x critical-section load {1, 100} pauses:
              10 threads, load 1    seed 004's cell: its spinning futex lost 24 % here
              256 threads           oversubscribed: who sleeps cheaply, and what CPU each op costs
              2 threads, load 100   one thread per CPU and a long critical section: a pure spinner
                                    wins here and lk_mutex should only tie (the honest cell)
              2/1, 10/100, 256/100  the rest of the 2 x 3 grid, so the lines and the heatmap are whole
    locks   lk_mutex; glibc_normal (the default pthread mutex: the baseline), glibc_adaptive (glibc's
            spinning mutex), futex3 (seed 004's plain futex mutex), rust_parking_lot (the strongest
            peer in the suite record), spin_ttas (the spinner); those the build lacks are skipped
    runs    5 repeats per cell and lock (Mann-Whitney needs 4+ per side for p < 0.05), the window
            length chosen so that the whole demo fits BUDGET_S (about 0.6 s each on 2 cores)

It writes DIR/mutex.json (its "command" is the equivalent `locklab bench` line, its "headline" the
claims), DIR/summary.md and DIR/report/, and ends with the headline: one line per claim,

    10 threads, load 1:   lk_mutex 3.29x [3.02, 5.67] glibc_normal, no overlap: faster

A claim gets a verdict only if every run it rests on was measured on a quiet machine (hostload.py's
rule: other processes used at most 10 % of the CPU while it ran); otherwise it says how busy the
machine was and gives none.  Nothing here measures time: the duration is sized from an estimate of
the driver's per-run overhead.
"""

import datetime as _dt
import os

from . import hostload, runner
from . import stats as st
from . import tables
from .errors import UsageError

FOCUS = "lk_mutex"
BASELINE = "glibc_normal"
PEERS = ["glibc_normal", "glibc_adaptive", "futex3", "rust_parking_lot", "spin_ttas"]
THREADS = [2, 10, 256]
LOADS = [1, 100]
REPEAT = 5
BUDGET_S = 180.0
REPORT_S = 15.0    # drawing the report (an estimate)
WARMUP_S = 0.05
OVERHEAD_S = 0.2   # per driver process: exec, pause calibration, thread start/join (an estimate)
MIN_DURATION_S, MAX_DURATION_S = 0.2, 2.0
QUICK = {"threads": [2, 10], "load": [1], "locks": 3, "repeat": 2, "duration": 0.02,
         "warmup": 0.0}


def choose_locks(wl, algorithms, quick=False, note=print):
    """The demo's locks in order (FOCUS first, then PEERS), each available one; a note per skip."""
    lp = wl.lock_param
    if lp is None:
        raise UsageError(f"demo: workload '{wl.name}' has no --lock parameter")
    accepted = {a["name"]: a for a in runner.algs_for(lp, algorithms)}
    locks = []
    for n in [FOCUS] + PEERS:
        a = accepted.get(n)
        if a is None:
            note(f"demo: skipping {n}: not in this driver's registry")
        elif not a.get("available", True):
            note(f"demo: skipping {n}: {a.get('missing') or 'not available'}")
        else:
            locks.append(n)
    if quick:
        locks = locks[:QUICK["locks"]]
    if FOCUS not in locks or len(locks) < 2:
        raise UsageError(f"demo: needs {FOCUS} and at least one other mutex of the mutex "
                         f"workload; this build has: {', '.join(locks) or 'none'}")
    return locks


def duration_for(runs):
    """The window length that fits `runs` driver runs and the report into BUDGET_S."""
    d = (BUDGET_S - REPORT_S) / runs - WARMUP_S - OVERHEAD_S
    return round(min(MAX_DURATION_S, max(MIN_DURATION_S, d)), 2)


def plan_demo(driver, quick=False, note=print):
    """The demo's runner.Plan, validated against the driver's description."""
    wl = driver.workload("mutex")
    algorithms = driver.algorithms()
    locks = choose_locks(wl, algorithms, quick, note)
    threads = QUICK["threads"] if quick else THREADS
    loads = QUICK["load"] if quick else LOADS
    tp, ldp = wl.param("threads"), wl.param("load")
    if tp is None or ldp is None:
        raise UsageError("demo: the mutex workload lacks --threads or --load")
    threads = [runner.parse_value(tp, str(t), algorithms, "--threads") for t in threads]
    loads = [runner.parse_value(ldp, str(x), algorithms, "--load") for x in loads]
    repeat = QUICK["repeat"] if quick else REPEAT
    runs = len(threads) * len(loads) * len(locks) * repeat
    if quick:
        duration, warmup = QUICK["duration"], QUICK["warmup"]
    else:
        duration, warmup = duration_for(runs), WARMUP_S
    fixed = {}
    for name, v in (("duration", duration), ("warmup", warmup)):
        prm = wl.param(name)
        if prm is not None:
            fixed[name] = runner.parse_value(prm, repr(v), algorithms, f"--{name}")
    axes = {}
    for name, vals in (("threads", threads), ("load", loads)):
        if len(vals) > 1:
            axes[name] = vals
        else:
            fixed[name] = vals[0]
    base = BASELINE if BASELINE in locks else locks[1]
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


# ------------------------------------------------------------------------------------------------
# the headline

def _cell_name(doc, cell):
    p = dict(doc.get("fixed", {}))
    p.update(cell["params"])
    bits = []
    if "threads" in p:
        bits.append(f"{p['threads']} thread{'s' if p['threads'] != 1 else ''}")
    if "load" in p:
        bits.append(f"load {p['load']}")
    return ", ".join(bits) or tables.fmt_params(cell["params"])


def _runs_of(doc, cell, lock):
    """The run records of `lock` in `cell`."""
    want = cell["params"]
    return [r for r in doc["runs"] if r.get("lock") == lock and
            all(r["params"].get(k) == v for k, v in want.items())]


def _field(runs, key):
    vals = [r["result"].get(key) for r in runs]
    return [float(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _busy(runs):
    judged = [r for r in runs if (r.get("host") or {}).get("busy") is not None]
    busy = [r for r in judged if r["host"]["busy"]]
    return len(busy), len(judged), len(runs)


def claim(subject, a, b, other, hib, runs, what="", better="faster", worse="slower"):
    """One headline line: `subject: FOCUS [what ]RATIO [CI] OTHER, overlap: verdict` from the two
    locks' samples a (focus) and b (other); no verdict when the runs were few or the machine busy."""
    if len(a) == 0 or len(b) == 0:
        return None
    c = st.compare_samples(a, b, hib)
    ratio = "-" if c["ratio"] is None else f"{c['ratio']:.2f}x"
    ci = c["ratio_ci95"]
    ci_txt = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None and ci[1] is not None else ""
    ov = "ranges overlap" if c["overlap"] else "no overlap"
    nbusy, njudged, nruns = _busy(runs)
    text = f"{subject}: {FOCUS} {what}{ratio}{ci_txt} {other}, {ov}"
    why = []
    if min(len(a), len(b)) < 4:
        why.append(f"{min(len(a), len(b))} runs per lock are too few")
    if nbusy:
        why.append(f"machine busy during {nbusy} of {nruns} runs")
    elif njudged < nruns:
        why.append(f"load not judged for {nruns - njudged} of {nruns} runs")
    if why:
        verdict = "busy" if nbusy else "no verdict"
        text += ": no verdict (" + "; ".join(why) + ")"
    else:
        verdict = c["verdict"]
        text += f": {dict(faster=better, slower=worse).get(verdict, verdict)}"
    return {"text": text, "verdict": verdict, "busy": nbusy > 0, "ratio": c["ratio"],
            "ratio_ci95": ci, "overlap": c["overlap"], "mannwhitney_p": c["mannwhitney_p"]}


def headline(doc):
    """The demo's claims: per cell FOCUS vs the baseline and vs the strongest other lock, CPU per
    operation where threads outnumber CPUs most, and the uncontended lock+unlock cost."""
    hib = doc["higher_is_better"]
    base = doc["baseline"]
    claims = []
    cells = [c for c in doc["cells"] if FOCUS in c["stats"]]
    for cell in cells:
        name = _cell_name(doc, cell)
        s = cell["stats"]
        others = [lk for lk in s if lk != FOCUS]
        if not others:
            continue
        best = (max if hib else min)(others, key=lambda lk: s[lk]["median"])
        for other in [base] + ([best] if best != base else []):
            if other not in s:
                continue
            runs = _runs_of(doc, cell, FOCUS) + _runs_of(doc, cell, other)
            label = other if other == base else f"{other} (best of the others)"
            cl = claim(name, s[FOCUS]["values"], s[other]["values"], label, hib, runs)
            if cl:
                claims.append(cl)
    # CPU per operation where threads outnumber CPUs the most (the oversubscription claim)
    over = [c for c in cells if isinstance(_p(doc, c, "threads"), int)]
    if over and base:
        top = max(_p(doc, c, "threads") for c in over)
        for cell in over:
            if _p(doc, cell, "threads") != top or base not in cell["stats"]:
                continue
            ra, rb = _runs_of(doc, cell, FOCUS), _runs_of(doc, cell, base)
            cl = claim(f"{_cell_name(doc, cell)}, CPU per op", _field(ra, "cpu_ns_per_op"),
                       _field(rb, "cpu_ns_per_op"), base, False, ra + rb, what="uses ",
                       better="less CPU", worse="more CPU")
            if cl:
                claims.append(cl)
    # uncontended lock+unlock: timed by the driver, single-threaded, before every run
    if base:
        ra = [r for r in doc["runs"] if r.get("lock") == FOCUS]
        rb = [r for r in doc["runs"] if r.get("lock") == base]
        a, b = _field(ra, "uncontended_pair_ns"), _field(rb, "uncontended_pair_ns")
        if a and b:
            cl = claim(f"uncontended lock+unlock ({st.summarize(a)['median']:.1f} vs "
                       f"{st.summarize(b)['median']:.1f} ns, every run)", a, b, base, False,
                       ra + rb, what="takes ")
            if cl:
                claims.append(cl)
    nbusy, njudged, nruns = _busy(doc["runs"])
    title = (f"Headline: {FOCUS} vs the default pthread mutex ({base}) and each cell's strongest "
             "other lock (median ratio [95% CI]; a verdict needs the ranges apart, p < 0.05 and "
             "a quiet machine)")
    out = {"title": title, "claims": claims, "busy_runs": nbusy, "judged_runs": njudged,
           "runs": nruns}
    if nbusy:
        out["busy_note"] = (f"The machine was busy during {nbusy} of {nruns} runs (other "
                            "processes used more than 10% of the CPU while they ran): the claims "
                            "without a verdict need a quiet machine. Run `locklab demo` again "
                            "when nothing else is running.")
    return out


def _p(doc, cell, key):
    p = dict(doc.get("fixed", {}))
    p.update(cell["params"])
    return p.get(key)


# ------------------------------------------------------------------------------------------------
# summary.md

def _vs(cell, lock, other, hib):
    s = cell["stats"]
    if lock not in s or other not in s:
        return "-"
    c = st.compare_samples(s[lock]["values"], s[other]["values"], hib)
    ci = c["ratio_ci95"]
    ci_txt = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None and ci[1] is not None else ""
    return f"{c['ratio']:.2f}x{ci_txt} {c['verdict']}" if c["ratio"] is not None else "-"


def summary_md(doc, notes=()):
    """DIR/summary.md: the headline, then per cell the winner and FOCUS against every other lock."""
    hib = doc["higher_is_better"]
    m = doc.get("machine", {})
    h = doc.get("headline") or headline(doc)
    n = max((r["repeat"] for r in doc["runs"]), default=-1) + 1
    lines = [f"# locklab demo: {FOCUS} against the locks that matter", "",
             f"Command: `{doc['command']}`", "",
             f"Machine: {m.get('cpu_model', '?')}, {m.get('online_cpus', '?')} online CPUs, "
             f"kernel {m.get('kernel', '?')}, relax {m.get('relax', '?')} "
             f"({m.get('pause_ns', '?')} ns), created {doc.get('created', '?')}.", "",
             f"Metric: {doc['metric']} ({'higher' if hib else 'lower'} is better), {n} runs per "
             f"cell and lock of {doc['fixed'].get('duration', '?')} s each. Busy rule: "
             f"{doc.get('busy_rule', hostload.BUSY_RULE)}.", "",
             f"## {h['title']}", ""]
    lines += [f"- {c['text']}" for c in h["claims"]]
    if h.get("busy_note"):
        lines += ["", f"**{h['busy_note']}**"]
    lines.append("")
    if notes:
        lines += [f"- {x}" for x in notes] + [""]
    others = [lk for lk in doc["locks"] if lk != FOCUS]
    lines += ["## Every cell", "",
              f"{FOCUS} against each lock: ratio of medians [95% CI] and verdict.", "",
              "| cell | winner (tied with) | " + f"{FOCUS} {doc['metric']} | " +
              " | ".join(f"vs {o}" for o in others) + " | busy runs |",
              "|---|---|---:|" + "---|" * len(others) + "---:|"]
    for cell in doc["cells"]:
        s = cell["stats"]
        tied = cell.get("winner_tied_with") or []
        win = f"{cell.get('winner')}" + (f" ({', '.join(tied)})" if tied else "")
        med = tables.fmt_num(s[FOCUS]["median"]) if FOCUS in s else "-"
        lines.append(f"| {_cell_name(doc, cell)} | {win} | {med} | " +
                     " | ".join(_vs(cell, FOCUS, o, hib) for o in others) +
                     f" | {cell.get('busy_runs', 0)} of {cell.get('judged_runs', 0)} |")
    lines.append("")
    return "\n".join(lines)


def write_report(json_paths, out_dir, note=print):
    """locklab.report.write_report; returns the path of index.html."""
    from . import report
    return report.write_report(json_paths, out_dir) or out_dir


def run(driver, out_dir=None, quick=False, progress=True, argv=None, note=print, resume=False):
    """The whole demo; returns the exit status."""
    from .cli import run_plan
    from .results import dump
    notes = []

    def collect(msg):
        notes.append(msg)
        note(msg)

    if resume and out_dir is None:
        raise UsageError("--resume: needs --out DIR, the directory of the interrupted demo")
    plan = plan_demo(driver, quick, collect)
    if out_dir is None:
        ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        out_dir = os.path.join("results", f"demo-{ts}")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"--out: expected a directory, got the file '{out_dir}'")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out: cannot create the directory '{out_dir}': "
                         f"{e.strerror or e}") from None
    jpath = os.path.join(out_dir, "mutex.json")
    busy_now = hostload.describe_now(os.cpu_count())
    if busy_now:
        note(f"demo: {busy_now}")
    est = plan.total_runs * (plan.fixed_args.get("duration", 1.0) +
                             plan.fixed_args.get("warmup", 0.1) + OVERHEAD_S) + REPORT_S
    note(f"demo: {len(plan.cells)} cells x {len(plan.locks)} locks x {plan.repeat} repeats = "
         f"{plan.total_runs} driver runs of {plan.fixed_args.get('duration')} s, about "
         f"{est / 60:.1f} minutes")
    invoked = runner.command_line(argv if argv is not None else ["demo"])
    resume_cmd = runner.command_line(["demo", "--out", out_dir, "--resume"])
    doc = run_plan(plan, driver, bench_argv(plan, jpath), jpath, progress=progress,
                   resume=resume, resume_command=resume_cmd)
    doc["invoked_as"] = invoked
    doc["headline"] = headline(doc)
    dump(doc, jpath)
    spath = os.path.join(out_dir, "summary.md")
    try:
        with open(spath, "w", encoding="utf-8") as f:
            f.write(summary_md(doc, notes))
    except OSError as e:
        raise UsageError(f"{spath}: cannot write: {e.strerror or e}") from None
    rpath = write_report([jpath], os.path.join(out_dir, "report"), note)
    print(f"wrote {jpath}")
    print(f"wrote {spath}")
    print(f"report: {rpath}")
    con = tables.console()
    tables.print_claims(doc, con)
    if doc["headline"].get("busy_note"):
        con.print()
        tables._say(con, doc["headline"]["busy_note"])
    return 0
