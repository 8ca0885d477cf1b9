"""`locklab suite`: every experiment of the source documents (seeds 004, 002, 000), one command.

Each experiment is a `locklab bench` invocation, written down here as data: the workload, the locks
(explicit names, or "+FAMILY" for every other available registry entry of that family, so peers join
by being registered), the swept and fixed parameters, the repeat count and the baseline. The suite
runs them in order through the same planner as `locklab bench`, writes

    DIR/<experiment>.json   one results file each (its "command" is the equivalent bench line)
    DIR/summary.md          per experiment: command, runs, and per cell the winner and its margin
    DIR/report/             one HTML report over all of them

Python measures nothing: the durations below only size the runs; `--quick` shrinks every experiment
to a smoke test of a few seconds (used by the tests). What each experiment reproduces:

  seed004-mutex       seed 004's threads x load table: lk_mutex vs glibc (normal, adaptive, PI), the
                      plain wait-wake futex mutex, TTAS and every available peer mutex (issues 2, 5)
  seed004-spinlock    the spinlocks (ours and peers') at and past the core count, with CPU per op
  seed002-lockref     lockref: spinlock only vs plain atomic vs unbounded vs bounded (limit 100)
  seed002-retry       the retry-limit sweep {1,15,50,100,200,500}: CAS failures per success, fallbacks
  seed002-cas-storm   raw cmpxchg loop vs fetch_add vs a lock: failures per success
  seed002-refcount    LKDTM REFCOUNT_TIMING: atomic vs fast vs full
  seed000-hash        perf bench futex hash: the kernel futex vs the parking lot's three layouts
  seed000-buckets     the kernel's private hash at autosize vs global vs 256 buckets (PR_FUTEX_HASH)
  seed000-wake        perf bench futex wake: wake-all latency, one at a time and one broadcast
  seed000-requeue     perf bench futex requeue: kernel CMP_REQUEUE vs lk_unpark_requeue
  issue11-mutex       the wide matrix: every blocking mutex at 1-256 threads, critical sections of
                      1, 100 and 2000 ns of busy work, and outside work of 0, 1, 10 and 100 times it
  issue11-pinned      the same mutexes on ONE pinned CPU (--cpus first, as taskset -c 0 or a
                      container's cpuset): 2-32 threads, 1 and 100 ns, outside work 0 and 1x
  issue11-batch       the same mutexes as a batch job: 100k critical sections split over the threads;
                      time to finish, slowest thread, spread
  issue11-spin        spin_ttas against tbb::spin_mutex and ck_fas at every thread count and load
  issue11-yield       the blocking mutexes where the holder calls sched_yield() inside the lock (as
                      stress-ng's mutex stressor does): 2-8 threads on one lock or split over two

An experiment with a `subject` (issue 11: lk_mutex, spin_ttas) gets, in the summary, every cell in
which the subject is neither first nor tied with the winner, on throughput (or time to finish),
p99 and p99.9 acquisition latency, the worst thread's own p99 and Jain fairness, each judged with
the verdict rule and the metric's own direction (stats.HIGHER_IS_BETTER), how many of those marks
chance alone could give (chance_of_mark()), and the slow-path counters of a statistics build.

Cost on the 2-CPU machine (runs x (window + warm-up + ~0.1 s start-up), from the plan; `locklab
suite --list` prints the commands): seed experiments ~11 min, issue11-mutex 4320 runs ~26 min,
issue11-pinned 640 runs ~4 min, issue11-batch 1080 runs ~5 min, issue11-spin 810 runs ~7 min,
issue11-yield 240 runs of 2 s ~10 min: about 65 minutes in all (docs/results/issue11-lab.md).
"""

import datetime as _dt
import math
import os
import random
from dataclasses import dataclass, field

from . import runner
from . import stats as st
from .tables import fmt_num
from .errors import UsageError


def _p(p):
    """A Mann-Whitney p for a table: "-" when it could not be computed."""
    return "-" if p is None else f"{p:.3g}"


OVERHEAD_S = 0.15  # per driver process, as in demo.py (an estimate for the progress line only)


@dataclass
class Experiment:
    name: str
    workload: str
    locks: list
    params: dict
    repeat: int = 5
    baseline: str = None
    quick: dict = field(default_factory=dict)  # parameter overrides for --quick
    subject: str = None  # the lock whose standing in every cell the summary judges (issue 11)


# Every blocking mutex: ours, glibc's three kinds, the plain futex mutex and every registered peer.
BLOCKING = ["lk_mutex", "glibc_normal", "glibc_adaptive", "glibc_pi", "futex3", "+mutex"]
# At, just above and far above a 2-CPU machine's core count: where spin-or-sleep decisions flip.
WIDE_THREADS = "1,2,3,4,8,16,32,64,256"

EXPERIMENTS = [
    Experiment("seed004-mutex", "mutex",
               ["lk_mutex", "glibc_normal", "glibc_adaptive", "glibc_pi", "futex3", "spin_ttas",
                "+mutex"],
               {"threads": "1,2,10,256", "load": "0,1,10,50,100", "duration": "0.3",
                "warmup": "0.05"},
               baseline="glibc_normal", quick={"threads": "1,2", "load": "10"}),
    # FIFO spinlocks hand the lock to a preempted waiter when threads outnumber CPUs: every handoff
    # then waits for a scheduler tick, so the oversubscribed column stops at 2x the usual core count.
    Experiment("seed004-spinlock", "spinlock", ["spin_ttas", "+spinlock"],
               {"threads": "1,2,4", "load": "0,10,100", "duration": "0.3", "warmup": "0.05"},
               baseline="spin_ttas", quick={"threads": "1,2", "load": "10"}),
    Experiment("seed002-lockref", "lockref", ["spinlock", "atomic", "unbounded", "bounded"],
               {"threads": "1,2,4,16", "retry-limit": "100", "duration": "0.3", "warmup": "0.05"},
               baseline="spinlock", quick={"threads": "1,2"}),
    Experiment("seed002-retry", "lockref", ["bounded"],
               {"threads": "2,4,16", "retry-limit": "1,15,50,100,200,500", "duration": "0.2",
                "warmup": "0.05"},
               quick={"threads": "2", "retry-limit": "1,100"}),
    Experiment("seed002-cas-storm", "cas-storm", ["cas", "faa", "mutex"],
               {"threads": "1,2,4,16", "duration": "0.3", "warmup": "0.05"},
               baseline="cas", quick={"threads": "2"}),
    Experiment("seed002-refcount", "refcount-timing", ["atomic", "fast", "full"],
               {"iterations": "33554432"}, repeat=7, baseline="atomic",
               quick={"iterations": "100000"}),
    Experiment("seed000-hash", "futex-hash", ["kernel", "packed", "split", "lean"],
               {"threads": "1,2,8", "futexes": "1024", "duration": "0.3", "warmup": "0.05"},
               baseline="kernel", quick={"threads": "2"}),
    Experiment("seed000-buckets", "futex-hash", ["kernel"],
               {"threads": "2,8,32", "buckets": "auto,global,256", "duration": "0.3",
                "warmup": "0.05"},
               quick={"threads": "2", "buckets": "auto,256"}),
    Experiment("seed000-wake", "futex-wake", ["kernel", "lean"],
               {"waiters": "2,16,64,256", "nwake": "1,0", "rounds": "10"},
               baseline="kernel", quick={"waiters": "2,4", "rounds": "2"}),
    Experiment("seed000-requeue", "requeue", ["kernel", "lean"],
               {"waiters": "16,64", "nrequeue": "1,0", "rounds": "10"},
               baseline="kernel", quick={"waiters": "4", "rounds": "2"}),
    # Issue 11's wide matrix. Critical sections in ns (1 ~ empty, 100, 2 us) so that the cells mean
    # the same on any CPU; the outside work as P = 0, L, 10L, 100L.
    Experiment("issue11-mutex", "mutex", BLOCKING,
               {"threads": WIDE_THREADS, "cs-ns": "1,100,2000", "parallel-ratio": "0,1,10,100",
                "duration": "0.2", "warmup": "0.05"},
               baseline="glibc_normal", subject="lk_mutex",
               quick={"threads": "1,3", "cs-ns": "1", "parallel-ratio": "0,10"}),
    # The same mutexes on one pinned CPU (a container pinned to a CPU): threads that wait for the
    # CPU, not for the lock, hold their roles in the lock word (docs/results/issue11-unlock-rmw/).
    Experiment("issue11-pinned", "mutex", BLOCKING,
               {"threads": "2,4,8,32", "cs-ns": "1,100", "parallel-ratio": "0,1", "cpus": "first",
                "duration": "0.2", "warmup": "0.05"},
               baseline="glibc_normal", subject="lk_mutex",
               quick={"threads": "2", "cs-ns": "1", "parallel-ratio": "0"}),
    # A batch of fixed total work, so that its time is comparable across thread counts and the
    # slowest lock (glibc_pi oversubscribed: ~50k ops/s) still finishes in seconds.
    Experiment("issue11-batch", "mutex-batch", BLOCKING,
               {"threads": WIDE_THREADS, "total-ops": "100000", "cs-ns": "1,100,2000"},
               baseline="glibc_normal", subject="lk_mutex",
               quick={"threads": "1,3", "total-ops": "3000", "cs-ns": "1"}),
    # A holder that yields its CPU inside the lock, the threads on one lock or split over two (two
    # programs sharing the CPUs, as `stress-ng --mutex 2`). 2 s windows: in 0.3 s ones the threads
    # have not yet settled on the CPUs, and the ranking is another one
    # (docs/results/issue11-yield-in-cs-2core/).
    Experiment("issue11-yield", "mutex", BLOCKING,
               {"threads": "2,4,8", "groups": "1,2", "cs-yield": "1", "cs-ns": "1", "duration": "2",
                "warmup": "0.1"},
               baseline="glibc_normal", subject="lk_mutex",
               quick={"threads": "4", "groups": "2"}),
    Experiment("issue11-spin", "spinlock", ["spin_ttas", "tbb_spin_mutex", "ck_fas"],
               {"threads": WIDE_THREADS, "cs-ns": "1,100,2000", "parallel-ratio": "0,10",
                "duration": "0.2", "warmup": "0.05"},
               baseline="spin_ttas", subject="spin_ttas",
               quick={"threads": "1,3", "cs-ns": "1", "parallel-ratio": "0"}),
]

QUICK_FIXED = {"duration": "0.02", "warmup": "0", "repeat": 2}


def resolve_locks(exp, wl, algorithms, note):
    """The experiment's lock names, '+FAMILY' expanded, unavailable ones dropped with a note."""
    lp = wl.lock_param
    if lp is None:
        return []
    accepted = {a["name"]: a for a in runner.algs_for(lp, algorithms)}
    names = []
    for item in exp.locks:
        if item.startswith("+"):
            fam = item[1:]
            names += [a["name"] for a in algorithms
                      if a.get("family") == fam and a["name"] not in names + exp.locks]
        else:
            names.append(item)
    locks = []
    for n in names:
        a = accepted.get(n)
        if a is not None and not a.get("available", True):
            note(f"{exp.name}: skipping {n}: {a.get('missing') or 'not available'}")
        elif a is None and lp.type == "alg":
            note(f"{exp.name}: skipping {n}: not in this driver's registry")
        else:
            locks.append(n)
    return locks


def bench_args(exp, locks, quick, retry_busy=0, seed=None):
    """The `locklab bench` arguments (after the workload) for one experiment; seed: the lock-order
    shuffle's (None: the bench's default)."""
    params = dict(exp.params)
    repeat = exp.repeat
    if quick:
        params.update(exp.quick)
        for k in ("duration", "warmup"):
            if k in params:
                params[k] = QUICK_FIXED[k]
        repeat = QUICK_FIXED["repeat"]
    args = []
    if locks:
        args += ["--lock", ",".join(locks)]
    for k, v in params.items():
        args += [f"--{k}", v]
    args += ["--repeat", str(repeat)]
    if exp.baseline and exp.baseline in locks:
        args += ["--baseline", exp.baseline]
    if retry_busy:
        args += ["--retry-busy", str(retry_busy)]
    if seed is not None:
        args += ["--seed", str(seed)]
    return args


SEED_MAX = 2**31 - 1


def recorded_seed(out_dir, exps):
    """The lock-order seed an interrupted suite in out_dir ran with: that of its first experiment
    file (complete or interrupted: order.seed) or partial file (the plan in its header) that has
    one, in the experiments' order; None when there is none."""
    for exp in exps:
        path = os.path.join(out_dir, f"{exp.name}.json")
        for p, read in ((path + ".partial", _partial_seed), (path, _doc_seed)):
            try:
                seed = read(p)
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                continue
            if isinstance(seed, int) and not isinstance(seed, bool):
                return seed
    return None


def _partial_seed(path):
    import json
    with open(path, encoding="utf-8") as f:
        return json.loads(f.readline())["plan"]["seed"]


def _doc_seed(path):
    from .results import load
    return load(path)["order"]["seed"]


def select(only):
    if not only:
        return list(EXPERIMENTS)
    wanted = [s for s in only.split(",") if s]
    known = {e.name: e for e in EXPERIMENTS}
    bad = [w for w in wanted if w not in known]
    if bad:
        raise UsageError(f"--only: expected experiment names from {', '.join(known)}, "
                         f"got '{','.join(bad)}'")
    return [known[w] for w in wanted]


def _runs_by(doc, lock, params, key):
    """result[key] of every run of `lock` in the cell `params` (numbers only)."""
    out = []
    for r in doc["runs"]:
        if r.get("lock") != lock or any(r["params"].get(k) != v for k, v in params.items()):
            continue
        v = r["result"].get(key)
        if isinstance(v, (int, float)):
            out.append(float(v))
    return out


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if n == 0 else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


def _cell_label(params):
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def targets_md(doc):
    """Issue 2's targets for lk_mutex, per cell of a mutex-workload results file (empty otherwise):
    median throughput vs the best glibc mutex and vs futex3 (ratio, CI, verdict), CPU per op vs glibc
    normal, the fraction of the serial limit reached, and the uncontended lock+unlock cost."""
    if doc.get("workload") != "mutex" or "lk_mutex" not in doc.get("locks", []):
        return []
    lines = ["### lk_mutex against the foundation issue's targets", "",
             "Throughput ratios are median/median with a 95% bootstrap CI and the verdict rule above "
             "(faster/slower only when ranges do not overlap and p < 0.05). CPU/op is process "
             "user+sys per operation over the window; serial fraction is ops/s over "
             "1e9/(critical section + uncontended pair).", "",
             "| cell | vs best glibc | vs futex3 | CPU/op lk vs glibc_normal (ns) | "
             "serial fraction lk / glibc_normal |", "|---|---|---|---|---|"]

    def vs(cell, other):
        stt = cell["stats"]
        if other not in stt or "lk_mutex" not in stt:
            return "-"
        c = st.compare_samples(stt["lk_mutex"]["values"], stt[other]["values"], True)
        return (f"{other}: {st.fmt_ratio(c)} "
                f"**{c['verdict']}**")

    pair = {}
    for cell in doc["cells"]:
        stt = cell["stats"]
        glibc = [n for n in ("glibc_normal", "glibc_adaptive") if n in stt]
        best = max(glibc, key=lambda n: stt[n]["median"]) if glibc else None
        cpu_lk = _median(_runs_by(doc, "lk_mutex", cell["params"], "cpu_ns_per_op"))
        cpu_gn = _median(_runs_by(doc, "glibc_normal", cell["params"], "cpu_ns_per_op"))
        sf_lk = _median(_runs_by(doc, "lk_mutex", cell["params"], "serial_fraction"))
        sf_gn = _median(_runs_by(doc, "glibc_normal", cell["params"], "serial_fraction"))
        cpu = (f"{cpu_lk:.0f} vs {cpu_gn:.0f} ({cpu_lk / cpu_gn:.2f}x)"
               if cpu_lk and cpu_gn else "-")
        sf = f"{sf_lk:.2f} / {sf_gn:.2f}" if sf_lk is not None and sf_gn is not None else "-"
        lines.append(f"| {_cell_label(cell['params'])} | "
                     f"{vs(cell, best) if best else '-'} | {vs(cell, 'futex3')} | {cpu} | {sf} |")
        for lock in doc["locks"]:
            pair.setdefault(lock, []).extend(_runs_by(doc, lock, cell["params"],
                                                      "uncontended_pair_ns"))
    lines += ["", "Uncontended lock+unlock, ns per pair (median over every run of the file, each "
              "timed single-threaded by the driver before its threads start): " +
              ", ".join(f"{k} {_median(v):.1f}" for k, v in pair.items() if v), ""]
    return lines


# ---- issue 11: the subject's standing in every cell, on every judged metric -------------------------

# What the summary judges per cell for an experiment's subject: the workload's throughput or time,
# acquisition latency and fairness. Each metric's direction comes from stats.HIGHER_IS_BETTER.
# thread_p99_max_ns is the worst of the sampled threads' own p99 (docs/results-schema.md): the merged
# percentiles count acquisitions, so a thread the lock keeps waiting barely moves them.
JUDGED = {
    "mutex": ["ops_per_sec", "p99_ns", "p999_ns", "thread_p99_max_ns", "fairness_jain"],
    "spinlock": ["ops_per_sec", "p99_ns", "p999_ns", "thread_p99_max_ns", "fairness_jain"],
    "mutex-batch": ["finish_s", "slowest_thread_s", "p99_ns", "p999_ns", "thread_p99_max_ns",
                    "fairness_jain"],
}
# The metrics issue 11 sets targets on (first or tied in every cell); the others are reported beside.
TARGETED = {"ops_per_sec", "finish_s", "p99_ns"}
LABEL = {"ops_per_sec": "throughput", "p99_ns": "p99 latency", "p999_ns": "p99.9 latency",
         "thread_p99_max_ns": "worst thread's p99", "fairness_jain": "Jain fairness",
         "finish_s": "time to finish", "slowest_thread_s": "slowest thread"}


def cell_results(doc, cell):
    """{lock: [run "result" objects]} of the runs in `cell`."""
    out = {}
    for r in doc["runs"]:
        if any(r["params"].get(k) != v for k, v in cell["params"].items()):
            continue
        out.setdefault(r.get("lock"), []).append(r["result"])
    return out


def standing(by_lock, metric, subject):
    """Where `subject` stands among the locks of one cell on `metric`, or None (it, or every other
    lock, has no value). Returns {place: first|tied|behind, winner, other, ratio, ratio_ci95, p,
    subject_median, other_median}: `other` is the winner (the lock the subject is behind, when that
    is not the winner), or the runner-up when the subject wins, and
    ratio = median(subject) / median(other) in the metric's own unit. "behind" is the verdict rule
    (ranges apart and Mann-Whitney p < 0.05) read through the metric's direction, against ANY lock
    of the cell: a subject tied with a winner whose runs spread widely, but clearly worse than the
    runner-up, is behind the runner-up (issue 11: "first or statistically tied among all")."""
    hib = st.higher_is_better(metric)
    vals = {lk: st.metric_values(rs, metric) for lk, rs in by_lock.items()}
    vals = {lk: v for lk, v in vals.items() if v}
    if subject not in vals or len(vals) < 2:
        return None
    sums = {lk: st.summarize(v) for lk, v in vals.items()}
    win, tied = st.winner(sums, hib)
    if win == subject:
        rest = {lk: s for lk, s in sums.items() if lk != subject}
        other, place = st.winner(rest, hib)[0], "first"
    elif subject not in tied:
        other, place = win, "behind"
    else:
        beats = [lk for lk in vals if lk not in (subject, win) and
                 st.compare_samples(vals[subject], vals[lk], hib)["verdict"] == "slower"]
        if beats:  # the best median among the locks the subject is clearly worse than
            key = (lambda lk: sums[lk]["median"]) if hib else (lambda lk: -sums[lk]["median"])
            other, place = max(beats, key=key), "behind"
        else:
            other, place = win, "tied"
    c = st.compare_samples(vals[subject], vals[other], hib)
    return {"place": place, "winner": win, "other": other, "ratio": c["ratio"],
            "ratio_ci95": c["ratio_ci95"], "p": c["mannwhitney_p"],
            "subject_median": sums[subject]["median"], "other_median": sums[other]["median"]}


def _ratio(x):
    if x is None:
        return "-"
    return f"{x:,.0f}x" if abs(x) >= 100 else f"{x:.2f}x"


def _ci(ci):
    return "-" if not ci or None in ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _entry(sd):
    if sd is None:
        return "-"
    if sd["place"] == "first":
        return f"first ({_ratio(sd['ratio'])} {sd['other']})"
    if sd["place"] == "tied":
        return f"tied ({_ratio(sd['ratio'])} {sd['other']})"
    return f"**behind {sd['other']}: {_ratio(sd['ratio'])}** {_ci(sd['ratio_ci95'])}"


START_SHARE = 0.25  # a batch whose threads start this share of its time apart measures start-up too


def start_share(by_lock, locks):
    """Median over the runs of `locks` of start_skew_s / finish_s (mutex-batch): how much of the time
    to finish went by before the last thread started. None when no run reports both."""
    shares = [r["start_skew_s"] / r["finish_s"] for lk in locks for r in by_lock.get(lk, [])
              if isinstance(r.get("start_skew_s"), (int, float)) and
              isinstance(r.get("finish_s"), (int, float)) and r["finish_s"] > 0]
    return _median(shares) if shares else None


LATENCY = ("p99_ns", "p999_ns", "thread_p99_max_ns")


def _fairness(by_lock, other, subject):
    """The losses table's fairness column: "Jain (min share) of other / of subject" from the
    medians, and whether `other` is less fair than `subject` by the verdict rule on Jain (marked
    with `*`)."""
    def part(lock):
        j = _median(st.metric_values(by_lock.get(lock, []), "fairness_jain"))
        ms = _median(st.metric_values(by_lock.get(lock, []), "min_share"))
        if j is None:
            return "-"
        return f"{j:.2f}" + (f" ({ms:.2f})" if ms is not None else "")
    a = st.metric_values(by_lock.get(other, []), "fairness_jain")
    b = st.metric_values(by_lock.get(subject, []), "fairness_jain")
    less = bool(a and b and st.compare_samples(a, b, True)["verdict"] == "slower")
    return f"{part(other)} / {part(subject)}" + (" *" if less else ""), less


def _slower(by_lock, other, subject, metric):
    """A latency row's addition to the fairness column: the lock ahead's speed against the
    subject's in that cell, "; throughput 0.70x" (ratio of medians, other / subject, in the cell's
    speed metric: throughput, or time to finish), with " slower" when it is slower by the verdict
    rule, and whether it is. ("", False) when either side lacks the metric."""
    a = st.metric_values(by_lock.get(other, []), metric)
    b = st.metric_values(by_lock.get(subject, []), metric)
    if not a or not b:
        return "", False
    c = st.compare_samples(a, b, st.higher_is_better(metric))
    if c["ratio"] is None:
        return "", False
    slower = c["verdict"] == "slower"
    return f"; {LABEL.get(metric, metric)} {c['ratio']:.2f}x" + (" slower" if slower else ""), slower


def _coverage(by_lock, other, subject):
    """A worst-thread p99 row's addition to the fairness column: "; threads timed N / M" (medians of
    latency.threads_sampled, other / subject), and whether `other` timed fewer threads than `subject`
    (marked `fewer`): its worst thread is then the worst of fewer threads. ("", False) when either
    side does not report it."""
    a = _median(st.metric_values(by_lock.get(other, []), "threads_sampled"))
    b = _median(st.metric_values(by_lock.get(subject, []), "threads_sampled"))
    if a is None or b is None:
        return "", False
    return f"; threads timed {a:.0f} / {b:.0f}" + (" fewer" if a < b else ""), a < b


def one_thread_scale(doc, subject, metric):
    """At 1 thread every lock runs the same loop alone, so the subject's median against the best
    lock's there is the file's noise scale: (lowest, highest, cells), as "x the best" with 1 the best
    (metric read through its direction), or None with fewer than 2 such cells."""
    hib = st.higher_is_better(metric)
    ratios = []
    for cell in doc["cells"]:
        if cell["params"].get("threads") != 1:
            continue
        meds = {lk: _median(v) for lk, rs in cell_results(doc, cell).items()
                if (v := st.metric_values(rs, metric))}
        if subject not in meds or len(meds) < 2 or min(meds.values()) <= 0:
            continue
        best = max(meds.values()) if hib else min(meds.values())
        ratios.append(meds[subject] / best if hib else best / meds[subject])
    if len(ratios) < 2:
        return None
    return min(ratios), max(ratios), len(ratios)


def chance_of_mark(by_lock, metric, subject):
    """An upper bound on the chance that the verdict rule marks `subject` behind on `metric` in this
    cell when no lock differs from it: if every lock's runs came from one distribution, the subject's
    n runs would lie wholly on the worse side of another lock's m runs with probability
    1 / C(n + m, n), the only order in which the ranges are apart; the rule marks it where that
    order's exact two-sided Mann-Whitney p, 2 / C(n + m, n), is below ALPHA (5 and 5 runs: 1 in
    252). Summed over the other locks (the union bound: "behind" is against any of them). 0 where
    the subject has no value."""
    vals = {lk: st.metric_values(rs, metric) for lk, rs in by_lock.items()}
    n = len(vals.get(subject) or [])
    if not n:
        return 0.0
    total = 0.0
    for lk, v in vals.items():
        if lk == subject or not v:
            continue
        orders = math.comb(n + len(v), n)
        if 2 / orders < st.ALPHA:
            total += 1 / orders
    return total


def standing_md(doc, subject):
    """The subject's standing per cell on every JUDGED metric, and the list of the cells where it is
    neither first nor tied (empty when the subject is not in the file)."""
    metrics = JUDGED.get(doc.get("workload"), [])
    if not metrics or subject not in doc.get("locks", []):
        return []
    losses, table = {True: [], False: []}, []
    started = {}  # mutex-batch: losses whose threads started START_SHARE of the time apart
    pairs = 0
    chance = {True: [0, 0.0], False: [0, 0.0]}  # targeted or not: [pairs, marks expected by chance]
    latency_rows = unfair_ahead = 0  # latency losses, and those behind a lock less fair there
    slower_ahead = 0  # latency losses behind a lock that does less work there (metrics[0])
    thread_rows = fewer_ahead = 0  # worst-thread p99 losses, and those behind fewer threads timed
    for cell in doc["cells"]:
        by_lock = cell_results(doc, cell)
        row = []
        for m in metrics:
            sd = standing(by_lock, m, subject)
            row.append(_entry(sd))
            if sd is None:
                continue
            pairs += 1
            chance[m in TARGETED][0] += 1
            chance[m in TARGETED][1] += chance_of_mark(by_lock, m, subject)
            if sd["place"] == "behind":
                share = start_share(by_lock, (subject, sd["other"])) \
                    if doc.get("workload") == "mutex-batch" else None
                if share is not None and share >= START_SHARE:
                    started.setdefault(_cell_label(cell["params"]), {})[sd["other"]] = share
                fair, less_fair = _fairness(by_lock, sd["other"], subject)
                if m in LATENCY:
                    latency_rows += 1
                    unfair_ahead += less_fair
                    mark, slower = _slower(by_lock, sd["other"], subject, metrics[0])
                    fair += mark
                    slower_ahead += slower
                if m == "thread_p99_max_ns":
                    cover, fewer = _coverage(by_lock, sd["other"], subject)
                    fair += cover
                    thread_rows += 1
                    fewer_ahead += fewer
                losses[m in TARGETED].append(
                              f"| {_cell_label(cell['params'])} | {LABEL.get(m, m)} | {sd['other']} | "
                              f"{fmt_num(sd['subject_median'])} | {fmt_num(sd['other_median'])} | "
                              f"{_ratio(sd['ratio'])} {_ci(sd['ratio_ci95'])} | "
                              f"{sd['p']:.3g} | {fair} |")
        table.append(f"| {_cell_label(cell['params'])} | " + " | ".join(row) + " |")
    dirs = ", ".join(f"{LABEL.get(m, m)} {'higher' if st.higher_is_better(m) else 'lower'}"
                     for m in metrics)
    lines = [f"### Where {subject} is neither first nor tied", "",
             f"Judged per cell on {len(metrics)} metrics ({dirs} is better), each with the verdict "
             "rule above: behind means the [min, max] ranges do not overlap and Mann-Whitney "
             f"p < 0.05, against the winner or against any other lock ({subject} can tie with a "
             "winner whose runs spread widely and still be clearly worse than the runner-up). "
             f"The ratio is median({subject}) / median(the lock ahead of it) in the metric's own "
             "unit, with its 95% bootstrap CI.", ""]
    scale = one_thread_scale(doc, subject, metrics[0])
    if scale:
        lo, hi, n = scale
        lines += [f"Noise scale: at 1 thread, where every lock runs the same loop alone, "
                  f"{subject}'s median {LABEL.get(metrics[0], metrics[0])} reads {lo:.2f}-{hi:.2f}x "
                  f"the best lock's in the {n} cells (1 = the best). A tie whose median is no further "
                  "below the best than that says no more than this machine's run-to-run spread.",
                  ""]
    nloss = len(losses[True]) + len(losses[False])
    if nloss:
        head = [f"| cell | metric | ahead of it | {subject} median | its median | "
                f"{subject} / it (95% CI) | p | Jain (min share): it / {subject}; on latency rows "
                f"its speed / {subject}'s |",
                "|---|---|---|---:|---:|---|---:|---|"]
        lines += [f"{nloss} of {pairs} (cell, metric) pairs.", ""]
        (pt, et), (pr, er) = chance[True], chance[False]
        lines += [f"By chance: if every lock's runs in a cell came from one distribution, "
                  f"{subject}'s n runs would lie wholly on the worse side of another lock's m runs "
                  "with probability 1 / C(n + m, n) (5 and 5 runs: 1 in 252), and the rule marks "
                  f"that. Summed over the other locks, up to {et:.1f} of the {pt} pairs on the "
                  f"issue's targets and {er:.1f} of the other {pr} could be marked by chance alone "
                  f"(an upper bound: it holds if no lock differed from {subject} anywhere). A row "
                  "that recurs in another record of the same matrix (`scripts/across-runs`) is a "
                  "finding; a row seen once is a lead.", ""]
        if unfair_ahead:
            lines += [f"In {unfair_ahead} of the {latency_rows} latency rows the lock ahead is less "
                      f"fair than {subject} in that cell (its Jain index lower by the verdict rule; "
                      "`*` in the last column). Latency is sampled per acquisition, so a thread that "
                      "waits through the whole window adds at most one sample, however long it "
                      "waited: part of such a lead is threads the lock kept waiting. The minimum "
                      "share is the fewest operations one thread did, over the mean per thread (0: "
                      "a thread did none).", ""]
        if slower_ahead:
            speed = LABEL.get(metrics[0], metrics[0])
            lines += [f"In {slower_ahead} of the {latency_rows} latency rows the lock ahead is "
                      f"slower than {subject} in that cell ({speed} worse by the verdict rule: "
                      f"`slower` after the ratio of medians it / {subject} in the last column). A "
                      "lock that completes fewer acquisitions leaves fewer of them to wait: part of "
                      "such a lead is work it did not do.", ""]
        if fewer_ahead:
            lines += [f"In {fewer_ahead} of the {thread_rows} worst-thread p99 rows the lock ahead "
                      f"timed acquisitions in fewer threads than {subject} (median threads with a "
                      "sample, `fewer` in the last column). A thread is timed on every lat-every'th "
                      "acquisition (16 by default), so a thread the lock let acquire fewer times "
                      "than that has no p99 of its own, however long it waited.", ""]
        for targeted, what in ((True, "On the issue's targets (throughput or time to finish, p99 "
                                      "latency)"),
                               (False, "Reported beside them")):
            n = len(losses[targeted])
            lines += [f"{what}: {n}" + (":" if n else "."), ""]
            if n:
                lines += head + losses[targeted] + [""]
        if started:
            lines += [f"Start-up: in {len(started)} of these cells the last thread started "
                      f"{START_SHARE:.0%} or more of the time to finish after the first (median "
                      f"start skew / time to finish over {subject}'s runs and those of the lock "
                      "ahead of it): "
                      + ", ".join(f"{c} (" + ", ".join(f"{v:.0%} with {o}" for o, v in by.items())
                                  + ")" for c, by in started.items()) +
                      ". There the batch measures how soon the threads get a CPU as much as the "
                      "lock; a larger --total-ops measures the lock.", ""]
    else:
        lines.append(f"None: {subject} is first or tied with the winner in all {pairs} (cell, "
                     "metric) pairs.")
    lines += ["", f"### {subject} per cell: " + ", ".join(LABEL.get(m, m) for m in metrics), "",
              "first (ratio to the runner-up), tied (ratio to the winner), or **behind the winner: "
              "ratio** [95% CI]; ratios are "
              f"{subject} / other in the metric's unit.", "",
              "| cell | " + " | ".join(LABEL.get(m, m) for m in metrics) + " |",
              "|---|" + "---|" * len(metrics)]
    return lines + table + [""]


def issue11_targets_md(doc, subject="lk_mutex"):
    """Issue 11's two other targets for the mutex workload: CPU per op at oversubscription within
    10% of the best blocking peer's, and the uncontended lock+unlock within 1 ns of the fastest."""
    if doc.get("workload") != "mutex" or subject not in doc.get("locks", []):
        return []
    online = doc.get("machine", {}).get("online_cpus")
    over, n, firm, seen = [], 0, 0, set()
    for cell in doc["cells"]:
        t = cell["params"].get("threads", doc.get("fixed", {}).get("threads"))
        by_lock = cell_results(doc, cell)
        # the CPUs the runs could use (--cpus pins them to fewer than are online)
        usable = [r["usable_cpus"] for rs in by_lock.values() for r in rs
                  if isinstance(r.get("usable_cpus"), int) and r["usable_cpus"] > 0]
        cpus = min(usable) if usable else online
        if not isinstance(cpus, int) or not isinstance(t, int) or t <= cpus:
            continue
        seen.add(cpus)
        vals = {lk: st.metric_values(rs, "cpu_ns_per_op") for lk, rs in by_lock.items()}
        med = {lk: _median(v) for lk, v in vals.items()}
        med = {lk: v for lk, v in med.items() if v}
        others = {lk: v for lk, v in med.items() if lk != subject}
        if subject not in med or not others:
            continue
        n += 1
        best = min(others, key=others.get)
        if med[subject] > 1.10 * others[best]:
            # the verdict rule against 1.10 x the peer's runs: a miss only the medians show is
            # within the run-to-run spread of the work outside the lock (docs/results/issue11-lab.md)
            c = st.compare_samples(vals[subject], [1.10 * v for v in vals[best]],
                                   higher_is_better=False)
            beyond = c["verdict"] == "slower"
            firm += beyond
            # its CI is that of subject / (1.10 x best): scaled back, the CI of subject / best
            ci = [None if x is None else 1.10 * x for x in c["ratio_ci95"]]
            over.append(f"{_cell_label(cell['params'])}: {med[subject]:.0f} ns against {best}'s "
                        f"{others[best]:.0f} ({med[subject] / others[best]:.2f}x {_ci(ci)}"
                        f"{'' if beyond else '; within the spread'})")
    lines = ["### Issue 11's other targets", "",
             f"- **CPU per op with more threads than CPUs "
             f"({', '.join(str(c) for c in sorted(seen)) if seen else online}), at most 1.10x the best blocking "
             f"peer's** (medians): " + (f"met in all {n} cells." if not over else
                                        f"not met in {len(over)} of {n} cells; {firm} of them beyond "
                                        "the spread (the verdict rule against 1.10x the peer's runs: "
                                        "ranges apart and Mann-Whitney p < 0.05), the others "
                                        "within it:")]
    lines += [f"  - {o}" for o in over]
    pair = {lk: _median([v for cell in doc["cells"] for v in st.metric_values(
        cell_results(doc, cell).get(lk, []), "uncontended_pair_ns")]) for lk in doc["locks"]}
    pair = {lk: v for lk, v in pair.items() if v is not None}
    others = {lk: v for lk, v in pair.items() if lk != subject}
    if subject in pair and others:
        best = min(others, key=others.get)
        d = pair[subject] - others[best]
        lines.append(f"- **Uncontended lock+unlock within 1 ns of the fastest blocking peer** "
                     f"(median over every run): {subject} {pair[subject]:.1f} ns, fastest peer "
                     f"{best} {others[best]:.1f} ns: {'met' if d <= 1.0 else 'not met'} "
                     f"({d:+.1f} ns).")
    return lines + [""]


# Slow-path counters of a statistics build: (column, event per op) and the derived spin success.
COUNTERS = [("spins/op", "mutex_spin_start"), ("parks/op", "mutex_park"),
            ("wakes/op", "mutex_wake"), ("handoffs/op", "mutex_handoff"),
            ("timeouts/op", "mutex_timeout"), ("spin ns lost/op", "mutex_spin_ns_lost"),
            ("spin yields/op", "mutex_spin_yield"), ("asks/op", "mutex_spin_ask"),
            ("handed/op", "mutex_spin_handed")]


def counters_md(doc, subject):
    """Per cell, the subject's slow-path counters (medians over its runs) beside context switches and
    CPU per op, when its runs carry an enabled lock_stats (a statistics build); one line otherwise."""
    if subject not in doc.get("locks", []):
        return []
    runs = [r["result"] for r in doc["runs"] if r.get("lock") == subject]
    if not any("lock_stats" in r for r in runs):
        return []
    if not any((r.get("lock_stats") or {}).get("enabled") for r in runs):
        return [f"Slow-path counters of {subject}: not counted by this build (a statistics build "
                "counts them: `make build-stats`, then the suite with "
                "LOCKLAB_BENCH=build-stats/locklab-bench).", ""]
    lines = [f"### {subject}'s slow-path counters (statistics build, medians per cell)", "",
             "Per operation over each whole run (warm-up included); spin success = spins that "
             "ended with the lock / spins started; csw/op = voluntary context switches per "
             "operation of the window.", "",
             "| cell | " + " | ".join(c for c, _ in COUNTERS) + " | spin success | csw/op | CPU/op (ns) |",
             "|---|" + "---:|" * (len(COUNTERS) + 3)]
    for cell in doc["cells"]:
        rs = [r for r in cell_results(doc, cell).get(subject, [])
              if (r.get("lock_stats") or {}).get("enabled")]
        if not rs:
            continue
        # an event its build did not count (an older library) is "-", not 0
        per = [_median([r["lock_stats"]["per_op"][ev] for r in rs if ev in r["lock_stats"]["per_op"]])
               if any(ev in r["lock_stats"]["per_op"] for r in rs) else None for _, ev in COUNTERS]
        succ = _median([r["lock_stats"]["mutex_spin_success"] / r["lock_stats"]["mutex_spin_start"]
                        for r in rs if r["lock_stats"].get("mutex_spin_start")])
        csw = _median([r["nvcsw"] / r["total_ops"] for r in rs if r.get("total_ops")])
        cpu = _median(st.metric_values(rs, "cpu_ns_per_op"))
        lines.append(f"| {_cell_label(cell['params'])} | " +
                     " | ".join(fmt_num(v) for v in per + [succ, csw, cpu]) + " |")
    return lines + [""]


# Per workload, the result fields (besides the metric) whose per-lock medians the summary tabulates:
# the figures the source documents argue about.
DETAILS = {
    "spinlock": ["ops_per_sec", "cpu_ns_per_op", "fairness_jain"],
    "mutex-batch": ["finish_s", "slowest_thread_s", "thread_time_spread", "start_skew_s",
                    "cpu_ns_per_op"],
    "lockref": ["ops_per_sec", "cas_failures_per_success", "fallback_rate", "cpu_ns_per_op"],
    "cas-storm": ["ops_per_sec", "cas_failures_per_success", "cpu_ns_per_op"],
    "refcount-timing": ["ns_per_op"],
    "futex-hash": ["ops_per_sec", "cpu_ns_per_op", "buckets_in_force", "bucket_bytes"],
    "futex-wake": ["wake_all_ns", "wake_calls_per_round"],
    "requeue": ["requeue_ns", "requeue_calls_per_round"],
}


def details_md(doc):
    """Per cell and lock, medians of the DETAILS fields present in the runs (empty if none)."""
    fields = DETAILS.get(doc.get("workload"), [])
    present = [f for f in fields if any(f in r["result"] for r in doc["runs"])]
    if not present:
        return []
    lines = ["Medians per cell and lock:", "",
             "| cell | lock | " + " | ".join(present) + " |",
             "|---|---|" + "---:|" * len(present)]
    for cell in doc["cells"]:
        cp = ", ".join(f"{k}={v}" for k, v in cell["params"].items()) or "-"
        for lock in doc["locks"]:
            vals = [_median(_runs_by(doc, lock, cell["params"], f)) for f in present]
            if all(v is None for v in vals):
                continue
            lines.append(f"| {cp} | {lock} | " + " | ".join(fmt_num(v) for v in vals) + " |")
    lines.append("")
    return lines


def _busy(r):
    """CPUs busy over a run's window: (user + system CPU) / its span (a batch's finish_s)."""
    span = r.get("elapsed_s") if isinstance(r.get("elapsed_s"), (int, float)) else r.get("finish_s")
    cpu = [r.get("cpu_user_s"), r.get("cpu_sys_s")]
    if not isinstance(span, (int, float)) or span <= 0 or not all(isinstance(x, (int, float)) for x in cpu):
        return None
    return sum(cpu) / span


def sched_view_md(doc, subject):
    """For each cell where the subject is behind on the workload's targeted throughput metric: its
    and the lock ahead's medians of CPUs busy, workers waiting for a CPU (runqueue_wait_threads)
    and migrations per second. Empty when the subject's runs do not report the scheduler's view
    (drivers before it, or a kernel without it)."""
    metric = next((m for m in JUDGED.get(doc.get("workload"), []) if m in ("ops_per_sec", "finish_s")),
                  None)
    if metric is None or subject not in doc.get("locks", []):
        return []
    if not any(isinstance(r["result"].get("runqueue_wait_threads"), (int, float))
               for r in doc["runs"] if r.get("lock") == subject):
        return []
    rows = []
    for cell in doc["cells"]:
        by_lock = cell_results(doc, cell)
        sd = standing(by_lock, metric, subject)
        if sd is None or sd["place"] != "behind":
            continue
        vals = []
        for lock in (subject, sd["other"]):
            rs = by_lock.get(lock, [])
            vals.append([_median([x for x in (_busy(r) for r in rs) if x is not None]),
                         _median([r["runqueue_wait_threads"] for r in rs
                                  if isinstance(r.get("runqueue_wait_threads"), (int, float))]),
                         _median([r["migrations_per_s"] for r in rs
                                  if isinstance(r.get("migrations_per_s"), (int, float))])])
        rows.append(f"| {_cell_label(cell['params'])} | {sd['other']} | "
                    + " | ".join(f"{fmt_num(a)} / {fmt_num(b)}" for a, b in zip(*vals)) + " |")
    lines = [f"### The scheduler's view where {subject} is behind on {LABEL.get(metric, metric)}", ""]
    if not rows:
        return lines + [f"{subject} is behind on {LABEL.get(metric, metric)} in no cell.", ""]
    return lines + [
        f"Medians over each lock's runs, {subject} / the lock ahead of it. CPUs busy = (user + "
        "system CPU) / window; waiting = workers runnable but waiting for a CPU, on average "
        "(result.runqueue_wait_threads). Threads waiting while CPUs busy stays below the usable "
        "CPUs suggest threads queued on one CPU while another idled (averages alone do not show "
        "that the two coincide).", "",
        "| cell | ahead of it | CPUs busy | waiting for a CPU | migrations/s |",
        "|---|---|---|---|---|"] + rows + [""]


def host_md(doc):
    """One line on how quiet the machine was: the runs the busy rule flagged, those measured again
    (--retry-busy), and the range of the runs' work_speed (hostload.py); [] where there is none of
    it."""
    from .hostload import SPEED_MIN, speed_summary
    runs = doc.get("runs") or []
    hosts = [(r.get("host") or {}, r) for r in runs]
    judged = [h for h, _ in hosts if h.get("busy") is not None]
    sp = speed_summary(runs)
    if not judged and sp is None:
        return []
    busy = sum(1 for h in judged if h["busy"])
    retried = [len(h.get("retried_why") or []) for h, _ in hosts]
    line = f"Busy machine (the file's busy_rule): {busy} of {len(judged)} judged runs."
    if any(retried):
        line += (f" {sum(1 for k in retried if k)} runs were measured again (--retry-busy), "
                 f"{sum(retried)} tries thrown away in all; the counts above are of the kept tries.")
    if sp is not None:
        line += (f" Work speed (host.work_speed, not part of the rule): the runs' timed work "
                 f"ran at {sp['min']:.2f}-{sp['max']:.2f}x the calibrated speed (median "
                 f"{sp['median']:.2f}x), {sp['slow']} of {sp['n']} runs below {SPEED_MIN:g}x.")
        if sp["slow"] or sp["max"] > 1 / SPEED_MIN:
            line += (" A machine whose speed moves this much between runs widens every range: "
                     "ties here are weaker evidence than on a steady machine.")
    return [line, ""]


def summary_md(docs, notes):
    lines = ["# locklab suite: the source documents' experiments", ""]
    if docs:
        m = docs[0][1].get("machine", {})
        lines += [f"Machine: {m.get('cpu_model', '?')}, {m.get('online_cpus', '?')} online CPUs, "
                  f"kernel {m.get('kernel', '?')}, relax {m.get('relax', '?')} "
                  f"({m.get('pause_ns', '?')} ns per relax), hypervisor {m.get('hypervisor', '?')}.",
                  ""]
    lines += [f"- {n}" for n in notes]
    if notes:
        lines.append("")
    for name, doc in docs:
        hib = doc["higher_is_better"]
        lines += [f"## {name}", "", f"`{doc['command']}`", "",
                  f"Metric {doc['metric']} ({'higher' if hib else 'lower'} is better); "
                  f"{len(doc['runs'])} runs; baseline {doc.get('baseline')}.", ""]
        lines += host_md(doc)
        lines += ["| cell | winner (tied with) | winner median | vs baseline (95% CI, p, verdict) |",
                  "|---|---|---:|---|"]
        for cell in doc["cells"]:
            cp = ", ".join(f"{k}={v}" for k, v in cell["params"].items()) or "-"
            win = cell.get("winner")
            tied = cell.get("winner_tied_with") or []
            med = cell["stats"].get(win, {}).get("median") if win else None
            comp = next((c for c in cell.get("comparisons", []) if c["lock"] == win), None)
            vs = "baseline" if win == doc.get("baseline") else (
                f"{st.fmt_ratio(comp, '.3g')} "
                f"p={_p(comp['mannwhitney_p'])} {comp['verdict']}" if comp else "-")
            lines.append(f"| {cp} | {win}{' (' + ', '.join(tied) + ')' if tied else ''} | "
                         f"{fmt_num(med)} | {vs} |" if med is not None else f"| {cp} | {win} | - | - |")
        lines.append("")
        if name == "seed004-mutex":
            lines += targets_md(doc)
        known = next((e for e in EXPERIMENTS if e.name == name), None)
        subject = doc.get("subject") or (known.subject if known else None)
        if subject:
            lines += standing_md(doc, subject)
            lines += issue11_targets_md(doc, subject)
            lines += sched_view_md(doc, subject)
            lines += counters_md(doc, subject)
        lines += details_md(doc)
    return "\n".join(lines)


def summarize(out_dir, note=print):
    """Rewrites DIR/summary.md and DIR/report/ from the results files already in DIR."""
    from .demo import write_report
    from .results import load
    docs, paths = [], []
    for exp in EXPERIMENTS:
        path = os.path.join(out_dir, f"{exp.name}.json")
        if os.path.isfile(path):
            docs.append((exp.name, load(path)))
            paths.append(path)
    if not docs:
        raise UsageError(f"--summarize: expected a directory with suite results, got '{out_dir}'")
    spath = os.path.join(out_dir, "summary.md")
    with open(spath, "w", encoding="utf-8") as f:
        f.write(summary_md(docs, []))
    print(f"wrote {spath}")
    rpath = write_report(paths, os.path.join(out_dir, "report"), note)
    if rpath:
        print(f"report: {rpath}")
    return 0


def run(driver, out_dir=None, quick=False, only=None, progress=True, note=print, resume=False,
        retry_busy=0, seed=None):
    """Runs the selected experiments; returns the exit status.  resume: continue an interrupted
    suite in out_dir (experiments already complete are kept, an interrupted one is resumed).
    retry_busy: every bench's --retry-busy.  seed: every bench's --seed; None draws a fresh one
    (or, with resume, reuses the interrupted suite's), so that two records of one matrix do not
    run their locks in the same order: a loss that recurs in both is then not the order's."""
    from .cli import build_plan, bench_parser, run_plan
    from .demo import write_report
    from .results import dump

    exps = select(only)
    if out_dir is None:
        ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
        out_dir = os.path.join("results", f"suite-{ts}")
    os.makedirs(out_dir, exist_ok=True)
    if seed is None and resume:
        seed = recorded_seed(out_dir, exps)
    if seed is None:
        seed = random.SystemRandom().randint(1, SEED_MAX)
    algorithms = driver.algorithms()
    notes, plans = [], []

    def collect(msg):
        notes.append(msg)
        note(msg)

    for exp in exps:  # plan everything first: bad input is reported before anything runs
        wl = driver.workload(exp.workload)
        locks = resolve_locks(exp, wl, algorithms, collect)
        if wl.lock_param is not None and not locks:
            collect(f"{exp.name}: skipped, none of its locks is available")
            continue
        args = bench_args(exp, locks, quick, retry_busy, seed)
        plan = build_plan(wl, algorithms, bench_parser(wl, algorithms).parse_args(args))
        plans.append((exp, args, plan))
    total = sum(p.total_runs * (float(p.fixed_args.get("duration", 0.0)) +
                                float(p.fixed_args.get("warmup", 0.0)) + OVERHEAD_S)
                for _, _, p in plans)
    note(f"suite: {len(plans)} experiments, {sum(p.total_runs for _, _, p in plans)} driver runs, "
         f"roughly {total / 60:.0f} minutes or more; lock-order seed {seed}")
    docs, paths = [], []
    for exp, args, plan in plans:
        path = os.path.join(out_dir, f"{exp.name}.json")
        note(f"suite: {exp.name}: locklab bench {exp.workload} {' '.join(args)}")
        partial = os.path.exists(path + ".partial")
        if resume and not partial and os.path.isfile(path):
            from .results import load
            doc = load(path)
            if doc.get("status", "complete") == "complete":
                note(f"suite: {exp.name}: kept, complete in {path}")
                docs.append((exp.name, doc))
                paths.append(path)
                continue
        doc = run_plan(plan, driver, ["bench", exp.workload] + args + ["--out", path], path,
                       progress=progress, resume=resume and partial,
                       resume_command=runner.command_line(
                           ["suite", "--out", out_dir, "--resume"] +
                           (["--only", only] if only else []) +
                           (["--retry-busy", str(retry_busy)] if retry_busy else []) +
                           ["--seed", str(seed)]))
        doc["experiment"] = exp.name
        if exp.subject:
            doc["subject"] = exp.subject
        dump(doc, path)
        docs.append((exp.name, doc))
        paths.append(path)
    spath = os.path.join(out_dir, "summary.md")
    with open(spath, "w", encoding="utf-8") as f:
        f.write(summary_md(docs, notes))
    print(f"wrote {spath}")
    rpath = write_report(paths, os.path.join(out_dir, "report"), note)
    if rpath:
        print(f"report: {rpath}")
    return 0
