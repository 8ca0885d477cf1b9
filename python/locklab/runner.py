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
                this code only collects run records.
    assemble    per cell and lock: summary statistics and secondary medians; per cell: every lock vs the
                baseline, and the winner with the locks tied with it.
"""

import datetime as _dt
import itertools
import math
import random
import re
import shlex

from . import stats as st
from .errors import DriverError, UsageError
from .results import SCHEMA

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
    """'a,b,,c' -> ['a', 'b', 'c'] with duplicates dropped (order kept); empty list is an error."""
    items = []
    for t in text.split(","):
        t = t.strip()
        if t and t not in items:
            items.append(t)
    if not items:
        raise UsageError(f"{opt}: expected a value or a comma-separated list, got '{text}'")
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
                 seed=0):
        self.workload = workload
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

    def driver_args(self, ci, lock):
        args = dict(self.fixed_args)
        args.update(self.cells[ci])
        if lock is not None:
            args["lock"] = lock
        return [(k, arg_text(v)) for k, v in args.items()]


def execute(plan, driver, progress=True, console=None):
    """Runs the schedule; returns [(repeat, cell index, lock, run record)] in execution order."""
    sched = plan.schedule()
    out = []
    prog = None
    if progress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        # no time columns: the CLI never times anything, the driver does
        prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        console=console or Console(stderr=True), transient=True)
        prog.start()
        task = prog.add_task(plan.workload.name, total=len(sched))
    try:
        for r, ci, lock in sched:
            if prog:
                desc = " ".join(f"{k}={v}" for k, v in plan.cells[ci].items())
                prog.update(task, description=f"{plan.workload.name} {desc} {lock or ''} "
                                              f"#{r + 1}/{plan.repeat}".replace("  ", " "))
            rec = driver.run(plan.workload.name, plan.driver_args(ci, lock))
            if plan.workload.metric not in rec["result"]:
                raise DriverError(f"run record of {plan.workload.name} lacks its metric "
                                  f"'{plan.workload.metric}'")
            out.append((r, ci, lock, rec))
            if prog:
                prog.advance(task)
    finally:
        if prog:
            prog.stop()
    return out


def metric_value(rec, metric):
    v = rec["result"].get(metric)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        raise DriverError(f"run record: metric '{metric}' is {v!r}, expected a finite number")
    return float(v)


def analyse_cell(params, by_lock, metric, hib, baseline, locks):
    """One cell of the results document from {lock key: [run records]}."""
    stats = {}
    for key in locks:
        recs = by_lock.get(key, [])
        if not recs:
            continue
        s = st.summarize([metric_value(r, metric) for r in recs])
        s["secondary"] = st.secondary_medians([r["result"] for r in recs])
        stats[key] = s
    comps = []
    if baseline in stats:
        for key in locks:
            if key == baseline or key not in stats:
                continue
            c = st.compare_samples(stats[key]["values"], stats[baseline]["values"], hib)
            comps.append({"lock": key, "baseline": baseline, **c})
    win, tied = st.winner(stats, hib)
    return {"params": params, "stats": stats, "comparisons": comps, "winner": win,
            "winner_tied_with": tied}


def assemble(plan, runs, command, created=None):
    """The results document (schema locklab-results/1) from execute()'s output."""
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
    return {
        "schema": SCHEMA,
        "workload": wl.name,
        "command": command,
        "created": created,
        "machine": first.get("machine", {}),
        "metric": wl.metric,
        "higher_is_better": wl.higher_is_better,
        "baseline": base,
        "locks": keys,
        "axes": {k: list(v) for k, v in plan.axes.items()},
        "fixed": fixed,
        "order": {"repeats_outer": True, "shuffle": plan.shuffle, "seed": plan.seed},
        "runs": [{**rec, "repeat": r} for r, ci, lock, rec in runs],
        "cells": cells,
    }


def command_line(argv):
    """The exact, shell-quoted command line that reproduces this invocation."""
    return shlex.join(["locklab", *argv])
