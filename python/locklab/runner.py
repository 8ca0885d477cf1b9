"""From a bench command to a results document.

    validate    every value is checked against the workload's *described* parameter (type, [min, max],
                choices, and for alg params the driver's registry incl. availability) before anything runs;
                a bad one is a UsageError "--threads: expected an integer in [1, 4096], got '0'".
    Plan        locks x cells x repeats.  Axis params given as comma lists are swept as a cartesian
                product (cells, in the order the values were given, first param outermost); a param given
                one value is fixed.  The schedule runs repeats as the OUTER loop, so slow drift of the
                machine (thermal, noisy neighbours) spreads over every cell and lock instead of biasing one,
                and within each (repeat, cell) shuffles the order of the locks with a seeded RNG, so no lock
                always runs right after another.
    execute     one driver process per (repeat, cell, lock), progress bar on stderr; the driver measures,
                this code only collects run records, and the host load around each one (hostload.py).
                Each finished run is appended at once to the partial file OUT.partial (PartialFile), so
                nothing measured is lost to Ctrl-C, a failed run or a killed process; `--resume` reads it
                back and runs only what is missing.
    assemble    per cell and lock: summary statistics, secondary medians and flags (runs with zero
                operations, windows shorter than planned); per cell: every lock vs the baseline, the
                winner with the locks tied with it, and how many runs were measured on a busy machine.
    measure     all of it for one `--out` file: checks that the file can be written before anything
                runs, executes, assembles and writes; on Ctrl-C or a failed run writes what was measured,
                marked "interrupted", and says how to continue.
"""

import datetime as _dt
import itertools
import json
import math
import os
import random
import re
import shlex

from . import hostload
from . import stats as st
from .errors import DriverError, FileError, Interrupted, UsageError
from .results import SCHEMA, SCHEMA_PARTIAL

NOLOCK = "-"  # stats key for workloads that have no "lock" parameter
MAX_REPEAT = 100000

_UINT = re.compile(r"^\+?[0-9]+$")


def _fmt_bound(x):
    if x is None:
        return "?"
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


def algs_for(param, algorithms):
    """Registry entries an alg param accepts (family in its choices; any family when none)."""
    fams = set(param.choices or [])
    return [a for a in algorithms if not fams or a.get("family") in fams]


def parse_value(param, text, algorithms=None, opt=None):
    """Typed value of `text` for the described `param`, or UsageError in the driver's words."""
    opt = opt or f"--{param.name}"
    text = text.strip()
    if param.type == "uint":
        lo, hi = param.min, param.max
        what = f"an integer in [{_fmt_bound(lo)}, {_fmt_bound(hi)}]"
        if not _UINT.match(text):
            raise UsageError(f"{opt}: expected {what}, got '{text}'")
        v = int(text)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise UsageError(f"{opt}: expected {what}, got '{text}'")
        return v
    if param.type == "double":
        lo, hi = param.min, param.max
        what = f"a number in [{_fmt_bound(lo)}, {_fmt_bound(hi)}]"
        try:
            v = float(text)
        except ValueError:
            raise UsageError(f"{opt}: expected {what}, got '{text}'")
        if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise UsageError(f"{opt}: expected {what}, got '{text}'")
        return v
    if param.type == "alg":
        cands = algs_for(param, algorithms or [])
        names = [a["name"] for a in cands]
        fam = "/".join(param.choices) if param.choices else "registry"
        for a in cands:
            if a["name"] == text:
                if not a.get("available", True):
                    raise UsageError(f"{opt}: '{text}' is not available in this build: "
                                     f"{a.get('missing') or 'no reason given'}")
                return text
        raise UsageError(f"{opt}: expected one of the {fam} algorithms "
                         f"({', '.join(names) or 'none registered'}), got '{text}'")
    # str
    if param.choices and text not in param.choices:
        raise UsageError(f"{opt}: expected one of {', '.join(param.choices)}, got '{text}'")
    return text


def split_list(text, opt):
    """'a,b,c' -> ['a', 'b', 'c'] with duplicates dropped (order kept).  An empty item ('2,,4',
    '2,', '') is an error: it is a typo, and dropping it would measure something else than asked."""
    items = []
    parts = [t.strip() for t in text.split(",")]
    if any(not t for t in parts):
        what = "a value" if len(parts) == 1 else "a comma-separated list without empty items"
        raise UsageError(f"{opt}: expected {what}, got '{text}'")
    for t in parts:
        if t not in items:
            items.append(t)
    return items


def parse_positive_int(text, opt, lo=1, hi=MAX_REPEAT):
    if text is None or not _UINT.match(str(text).strip()) or not lo <= int(text) <= hi:
        raise UsageError(f"{opt}: expected an integer in [{lo}, {hi}], got '{text}'")
    return int(text)


def arg_text(v):
    """A typed value as the driver wants it on its command line."""
    if isinstance(v, float):
        return repr(v)
    return str(v)


class Plan:
    """What one `locklab bench` will run, validated; schedule() gives the execution order."""

    def __init__(self, workload, locks, axes, fixed_args, repeat, baseline=None, shuffle=True,
                 seed=0, retry_busy=0):
        self.workload = workload
        self.retry_busy = retry_busy  # measure a busy run again, up to this many times (execute())
        self.locks = list(locks) if locks else [None]
        self.axes = dict(axes)  # name -> [typed values], each with >= 2 values
        self.fixed_args = dict(fixed_args)  # name -> typed value (given once on the command line)
        self.repeat = repeat
        self.shuffle = shuffle
        self.seed = seed
        if baseline is not None and self.locks == [None]:
            raise UsageError(f"--baseline: workload '{workload.name}' has no --lock to compare, "
                             f"got '{baseline}'")
        if baseline is not None and baseline not in self.locks:
            raise UsageError(f"--baseline: expected one of the benched locks "
                             f"({', '.join(str(x) for x in self.locks)}), got '{baseline}'")
        self.baseline = baseline if baseline is not None else self.locks[0]
        names = list(self.axes)
        self.cells = [dict(zip(names, combo))
                      for combo in itertools.product(*(self.axes[n] for n in names))]

    @property
    def total_runs(self):
        return self.repeat * len(self.cells) * len(self.locks)

    def schedule(self):
        """[(repeat, cell index, lock)]: repeats outermost, cells in order, locks shuffled per cell."""
        rng = random.Random(self.seed)
        out = []
        for r in range(self.repeat):
            for ci in range(len(self.cells)):
                order = list(self.locks)
                if self.shuffle:
                    rng.shuffle(order)
                out.extend((r, ci, lock) for lock in order)
        return out

    def describe(self):
        """What makes two plans the same measurement (stored in the partial file's header)."""
        d = {"locks": self.locks, "axes": self.axes, "fixed": self.fixed_args,
             "repeat": self.repeat, "baseline": self.baseline, "shuffle": self.shuffle,
             "seed": self.seed}
        if self.retry_busy:  # absent at 0: partial files written before the option still match
            d["retry_busy"] = self.retry_busy
        return d

    def driver_args(self, ci, lock):
        args = dict(self.fixed_args)
        args.update(self.cells[ci])
        if lock is not None:
            args["lock"] = lock
        return [(k, arg_text(v)) for k, v in args.items()]


class RunStopped(Exception):
    """execute() stopped early: `runs` holds every run that finished, `cause` what stopped it."""

    def __init__(self, runs, cause):
        super().__init__(str(cause))
        self.runs = runs
        self.cause = cause


BUSY_ENV = "LOCKLAB_BUSY_NS_PER_ITER"


def busy_calibration(rec):
    """The busy-loop calibration a run record reports (ns per iteration), or None."""
    work = rec.get("result", {}).get("work")
    v = work.get("busy_ns_per_iter") if isinstance(work, dict) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.01 <= v <= 100 else None


def execute(plan, driver, progress=True, console=None, partial=None, done=None):
    """Runs the schedule; returns [(repeat, cell index, lock, run record)] in schedule order.

    done: {schedule index: (repeat, cell, lock, record)} already measured (from --resume); those are
    not run again.  partial: a PartialFile each finished run is appended to before the next starts.
    Ctrl-C or a failed run raises RunStopped with every run that finished."""
    sched = plan.schedule()
    done = done or {}
    out = []
    prog = None
    # One busy-loop calibration for the whole bench: the first run measures it, every later run is
    # given it (LOCKLAB_BUSY_NS_PER_ITER), so every lock does the same iterations for the same
    # --cs-ns/--parallel-ns. Measured per process it varied 2x on a VM, and at a few ns of work the
    # iteration count decided the throughput (docs/spinlocks.md). A value the user set is left alone.
    user_set = bool(os.environ.get(BUSY_ENV))
    calib = None
    if not user_set:
        for rec in (d[3] for _, d in sorted(done.items())):
            calib = calib or busy_calibration(rec)
    if progress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        # no time columns: the CLI never times anything, the driver does
        prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        console=console or Console(stderr=True), transient=True)
        prog.start()
        task = prog.add_task(plan.workload.name, total=len(sched), completed=len(done))
    try:
        for idx, (r, ci, lock) in enumerate(sched):
            if idx in done:
                out.append(done[idx])
                continue
            if prog:
                desc = " ".join(f"{k}={v}" for k, v in plan.cells[ci].items())
                prog.update(task, description=f"{plan.workload.name} {desc} {lock or ''} "
                                              f"#{r + 1}/{plan.repeat}".replace("  ", " "))
            # --retry-busy: a run the busy rule flags is measured again, up to plan.retry_busy
            # times; the last try is kept, and host.retried_why says why each earlier one was not
            retried = []
            while True:
                try:
                    before = hostload.sample()
                    rec = driver.run(plan.workload.name, plan.driver_args(ci, lock),
                                     env={BUSY_ENV: repr(calib)} if calib else None)
                    after = hostload.sample()
                    if plan.workload.metric not in rec["result"]:
                        raise DriverError(f"run record of {plan.workload.name} lacks its metric "
                                          f"'{plan.workload.metric}'")
                except (DriverError, KeyboardInterrupt) as e:
                    raise RunStopped(out, e) from None
                rec["host"] = hostload.judge(before, after, rec)
                if rec["host"].get("busy") is not True or len(retried) >= plan.retry_busy:
                    break
                retried.append(rec["host"].get("busy_why", "busy"))
            if retried:
                rec["host"]["retried_why"] = retried
            if not calib and not user_set:
                calib = busy_calibration(rec)
            if partial is not None:
                partial.append(idx, r, ci, lock, rec)
            out.append((r, ci, lock, rec))
            if prog:
                prog.advance(task)
    finally:
        if prog:
            prog.stop()
    return out


class PartialFile:
    """OUT.partial: the runs of an unfinished bench, one JSON line each, written as they finish.

    Line 1 is the header {"schema": "locklab-partial/1", "workload", "command", "plan"}; every other
    line {"index", "repeat", "cell", "lock", "record"} is one finished run at position `index` of the
    plan's schedule (both are $defs of schema/results.schema.json).  Lines are appended and flushed
    one by one, so a process killed at any moment leaves at most its last line cut short; read()
    ignores such a line.  The file is removed once OUT holds every run."""

    def __init__(self, path):
        self.path = str(path)
        self.f = None

    @staticmethod
    def for_out(out):
        return PartialFile(f"{out}.partial")

    def exists(self):
        return os.path.exists(self.path)

    def create(self, plan, command):
        """Start a new partial file; FileError naming --out when it cannot be written."""
        header = {"schema": SCHEMA_PARTIAL, "workload": plan.workload.name, "command": command,
                  "plan": plan.describe()}
        try:
            self.f = open(self.path, "w", encoding="utf-8")
            self._line(header)
        except OSError as e:
            self.close()
            raise FileError(self.path, f"--out: cannot write here: {e.strerror or e}") from None

    def reopen(self):
        try:
            self.f = open(self.path, "a", encoding="utf-8")
        except OSError as e:
            raise FileError(self.path, f"--resume: cannot append: {e.strerror or e}") from None

    def _line(self, obj):
        self.f.write(json.dumps(obj, allow_nan=False) + "\n")
        self.f.flush()

    def append(self, idx, r, ci, lock, rec):
        try:
            self._line({"index": idx, "repeat": r, "cell": ci, "lock": lock, "record": rec})
        except OSError as e:
            raise FileError(self.path, f"cannot write: {e.strerror or e}") from None

    def close(self):
        if self.f is not None:
            try:
                self.f.close()
            except OSError:
                pass
            self.f = None

    def remove(self):
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def read(self, plan):
        """{schedule index: (repeat, cell, lock, record)} of a partial file made by this same plan;
        FileError naming the line and the problem otherwise."""
        from .results import check
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except OSError as e:
            raise FileError(self.path, f"--resume: cannot read: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise FileError(self.path, "--resume: not a partial file (not UTF-8 text)") from None
        last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
        objs = []
        for i, ln in enumerate(lines):
            if not ln.strip():
                continue
            try:
                objs.append((i + 1, json.loads(ln)))
            except ValueError:
                if i == last and i > 0:  # the line a killed process was writing
                    break
                raise FileError(self.path, f"line {i + 1}: not JSON; not a partial file "
                                           "written by locklab") from None
        if not objs:
            raise FileError(self.path, "--resume: empty partial file")
        lineno, header = objs[0]
        if not isinstance(header, dict) or header.get("schema") != SCHEMA_PARTIAL:
            raise FileError(self.path, f"line 1: expected a \"{SCHEMA_PARTIAL}\" header")
        problem = check(header, "partial_header")
        if problem:
            raise FileError(self.path, f"line 1: {problem}")
        mine, theirs = _norm(plan.describe()), _norm(header["plan"])
        if header.get("workload") != plan.workload.name or mine != theirs:
            diffs = [f"workload {header.get('workload')} there, {plan.workload.name} here"] \
                if header.get("workload") != plan.workload.name else []
            for k in sorted(set(mine) | set(theirs)):
                if mine.get(k) != theirs.get(k):
                    diffs.append(f"{k}: {json.dumps(theirs.get(k))} there, "
                                 f"{json.dumps(mine.get(k))} here")
            raise UsageError(f"--resume: {self.path} was started with other options ("
                             f"{'; '.join(diffs)}); run its command again with --resume: "
                             f"{header.get('command')}")
        sched = plan.schedule()
        done = {}
        for lineno, obj in objs[1:]:
            problem = check(obj, "partial_run")
            if problem:
                raise FileError(self.path, f"line {lineno}: {problem}")
            idx = obj["index"]
            if idx >= len(sched) or sched[idx] != (obj["repeat"], obj["cell"], obj["lock"]):
                raise FileError(self.path, f"line {lineno}: run {idx} is not in this plan's "
                                           "schedule")
            done[idx] = (obj["repeat"], obj["cell"], obj["lock"], obj["record"])
        return done


def _norm(obj):
    """JSON round trip: what the partial file holds compares equal to what the plan says."""
    return json.loads(json.dumps(obj))


def metric_value(rec, metric):
    v = rec["result"].get(metric)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise DriverError(f"run record: metric '{metric}' is {v!r}, expected a finite number")
    return float(v)


SHORT_WINDOW = 0.95  # a window shorter than this fraction of --duration is flagged


def run_flags(recs):
    """What makes some of these runs unusable as they are, in words (empty when nothing does):
    runs that did zero operations, and measuring windows shorter than the planned --duration."""
    flags = []
    n = len(recs)
    zero = sum(1 for r in recs if r["result"].get("total_ops") == 0)
    if zero:
        flags.append(f"{zero} of {n} runs did zero operations")
    short = []
    for r in recs:
        el, dur = r["result"].get("elapsed_s"), (r.get("params") or {}).get("duration")
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (el, dur)) \
                and dur > 0 and el < SHORT_WINDOW * dur:
            short.append(el)
    if short:
        dur = recs[0]["params"]["duration"]
        flags.append(f"{len(short)} of {n} runs measured a window shorter than planned "
                     f"({min(short):.3g} s, {dur:g} s planned)")
    return flags


def analyse_cell(params, by_lock, metric, hib, baseline, locks):
    """One cell of the results document from {lock key: [run records]}."""
    stats = {}
    busy = judged = 0
    for key in locks:
        recs = by_lock.get(key, [])
        if not recs:
            continue
        s = st.summarize([metric_value(r, metric) for r in recs])
        s["secondary"] = st.secondary_medians([r["result"] for r in recs])
        flags = run_flags(recs)
        if flags:
            s["flags"] = flags
        stats[key] = s
        for r in recs:
            b = (r.get("host") or {}).get("busy")
            judged += b is not None
            busy += b is True
    comps = []
    if baseline in stats:
        for key in locks:
            if key == baseline or key not in stats:
                continue
            c = st.compare_samples(stats[key]["values"], stats[baseline]["values"], hib)
            comps.append({"lock": key, "baseline": baseline, **c})
    win, tied = st.winner(stats, hib)
    return {"params": params, "stats": stats, "comparisons": comps, "winner": win,
            "winner_tied_with": tied, "busy_runs": busy, "judged_runs": judged}


def assemble(plan, runs, command, created=None, status="complete", reason=None):
    """The results document (schema locklab-results/1) from execute()'s output."""
    from .version import provenance
    wl = plan.workload
    keys = [lk if lk is not None else NOLOCK for lk in plan.locks]
    grouped = [{k: [] for k in keys} for _ in plan.cells]
    for r, ci, lock, rec in runs:
        grouped[ci][lock if lock is not None else NOLOCK].append(rec)
    first = runs[0][3] if runs else {}
    fixed = {k: v for k, v in (first.get("params") or {}).items()
             if k != "lock" and k not in plan.axes}
    if not fixed:
        fixed = dict(plan.fixed_args)
    base = plan.baseline if plan.baseline is not None else NOLOCK
    cells = [analyse_cell(plan.cells[ci], grouped[ci], wl.metric, wl.higher_is_better, base, keys)
             for ci in range(len(plan.cells))]
    created = created or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {
        "schema": SCHEMA,
        "workload": wl.name,
        "command": command,
        "created": created,
        "status": status,
        "planned_runs": plan.total_runs,
        "locklab": provenance(),
        "machine": first.get("machine", {}),
        "metric": wl.metric,
        "higher_is_better": wl.higher_is_better,
        "baseline": base,
        "locks": keys,
        "axes": {k: list(v) for k, v in plan.axes.items()},
        "fixed": fixed,
        "order": {"repeats_outer": True, "shuffle": plan.shuffle, "seed": plan.seed,
                  "retry_busy": plan.retry_busy},
        "busy_rule": hostload.BUSY_RULE,
        "runs": [{**rec, "repeat": r} for r, ci, lock, rec in runs],
        "cells": cells,
    }
    if reason:
        doc["status_reason"] = reason
    return doc


def prepare_out(out):
    """Refuse an --out that cannot become a results file, before anything is measured."""
    if os.path.isdir(out):
        raise UsageError(f"--out: expected a file name, got the directory '{out}'")
    if os.path.lexists(out) and not os.path.isfile(out):
        raise UsageError(f"--out: '{out}' exists and is not a regular file")
    d = os.path.dirname(out)
    if d:
        make_dir(d, "--out")


def make_dir(d, opt):
    """os.makedirs with the error a user can act on ("'d/file' is not a directory")."""
    anc = d
    while anc and not os.path.exists(anc):
        anc = os.path.dirname(anc)
    if anc and not os.path.isdir(anc):
        raise UsageError(f"{opt}: cannot create the directory '{d}': '{anc}' is not a directory")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{opt}: cannot create the directory '{d}': {e.strerror or e}") from None


def measure(plan, driver, command, out, progress=True, resume=False, resume_command=None):
    """Run `plan` into the results file `out`; returns the results document.

    Before anything runs: `out` must be creatable and its partial file writable; a partial file
    left by an interrupted run is continued with resume=True and otherwise refused (it holds
    measurements).  Ctrl-C or a failed run writes what was measured to `out`, marked
    "interrupted", keeps the partial file, and raises Interrupted (or the DriverError) saying how
    to continue (resume_command, default: `command --resume`)."""
    prepare_out(out)
    partial = PartialFile.for_out(out)
    done = {}
    if resume:
        if not partial.exists():
            raise UsageError(f"--resume: no partial file {partial.path}: nothing to resume "
                             "(run without --resume to start afresh)")
        done = partial.read(plan)
        partial.reopen()
    elif partial.exists():
        raise UsageError(f"--out: {partial.path} holds the runs of an unfinished bench: continue "
                         "it by adding --resume to the same command, or delete it to start afresh")
    else:
        partial.create(plan, command)
    try:
        runs = execute(plan, driver, progress=progress, partial=partial, done=done)
    except RunStopped as stop:
        partial.close()
        cause = stop.cause
        interrupted = isinstance(cause, KeyboardInterrupt)
        reason = "interrupted (Ctrl-C)" if interrupted else f"a run failed: {cause.message}"
        if not stop.runs:
            if not resume:
                partial.remove()
            if interrupted:
                raise Interrupted("interrupted before the first run finished; nothing was "
                                  "measured") from None
            raise cause
        from .results import dump
        dump(assemble(plan, stop.runs, command, status="interrupted", reason=reason), out)
        kept = (f"kept the {len(stop.runs)} of {plan.total_runs} runs that finished in {out} "
                f"(marked interrupted); continue with: {resume_command or command + ' --resume'}")
        if interrupted:
            raise Interrupted(f"interrupted: {kept}") from None
        cause.kept = kept
        raise cause
    partial.close()
    from .results import dump
    doc = assemble(plan, runs, command)
    dump(doc, out)
    partial.remove()
    return doc


def command_line(argv):
    """The exact, shell-quoted command line that reproduces this invocation."""
    return shlex.join(["locklab", *argv])
