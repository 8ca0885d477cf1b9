"""The headline of a results file: one lock (the focus) against every other lock, cell by cell.

    focus_summary(doc, focus)   per other lock: in how many cells the focus is faster, tied and
                                slower, the cells it loses with their ratios, and how many of the
                                cells were measured on a busy machine
    pick_focus(doc, wanted)     which lock that is: `wanted` (--focus) if the file has it, else
                                lk_mutex, else the first lock that is not the baseline, with why

Verdicts use the lab's one rule (stats.compare_samples): "faster" or "slower" only when the [min,
max] ranges of the two locks' runs do not overlap and Mann-Whitney p < 0.05; anything else is
"tied".  Ratios are focus median / other median, read through higher_is_better: a ratio above 1 is
better for a higher-is-better metric, below 1 for a lower-is-better one.  The terminal (tables.py)
and the report (report.py) both print this.
"""

import math

from . import stats as st

DEFAULT_FOCUS = "lk_mutex"


def _num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _values(cell, lock):
    s = (cell.get("stats") or {}).get(lock)
    if not isinstance(s, dict):
        return None
    vals = [_num(v) for v in s.get("values") or []]
    vals = [v for v in vals if v is not None]
    return vals or None


def locks_of(doc):
    locks = [x for x in doc.get("locks") or [] if isinstance(x, str)]
    for c in doc.get("cells") or []:
        for name in (c.get("stats") or {}):
            if name not in locks:
                locks.append(name)
    return locks


def pick_focus(doc, wanted=None):
    """(focus lock or None, why it was chosen)."""
    locks = locks_of(doc)
    if wanted:
        if wanted in locks:
            return wanted, "--focus"
        why = f"--focus {wanted} is not in this file"
    else:
        why = None
    if DEFAULT_FOCUS in locks:
        return DEFAULT_FOCUS, why or "the library's mutex"
    base = doc.get("baseline")
    others = [x for x in locks if x != base]
    if len(locks) < 2:
        return None, (why + "; " if why else "") + "one lock only: nothing to compare"
    pick = others[0] if others else locks[0]
    return pick, (why + "; " if why else "") + \
        f"{DEFAULT_FOCUS} is not in this file: the first lock listed that is not the baseline"


def cell_label(cell):
    p = cell.get("params") or {}
    return ", ".join(f"{k}={v}" for k, v in p.items()) or "(single cell)"


def cell_busy(cell):
    b = cell.get("busy_runs")
    return isinstance(b, int) and b > 0


def focus_summary(doc, focus):
    """[{other, faster, tied, slower, lost: [(cell label, ratio, ci, busy)], won: [...],
    busy_cells}] in the file's lock order; cells where either lock has no runs are not counted."""
    hib = doc.get("higher_is_better", True) is not False
    out = []
    for other in locks_of(doc):
        if other == focus:
            continue
        row = {"other": other, "faster": 0, "tied": 0, "slower": 0, "lost": [], "won": [],
               "busy_cells": 0}
        for cell in doc.get("cells") or []:
            a, b = _values(cell, focus), _values(cell, other)
            if a is None or b is None:
                continue
            c = st.compare_samples(a, b, hib)
            row[c["verdict"]] += 1
            busy = cell_busy(cell)
            row["busy_cells"] += busy
            entry = (cell_label(cell), c["ratio"], c["ratio_ci95"], busy)
            if c["verdict"] == "slower":
                row["lost"].append(entry)
            elif c["verdict"] == "faster":
                row["won"].append(entry)
        if row["faster"] + row["tied"] + row["slower"]:
            out.append(row)
    return out


def _r(x):
    return f"{x:.2f}" if abs(x) >= 0.095 else f"{x:.2g}"


def fmt_ratio_ci(ratio, ci):
    """'0.68x [0.59, 0.75]'; small ratios keep two significant digits ('0.0042x')."""
    if ratio is None:
        return "-"
    r = f"{_r(ratio)}x"
    if ci and ci[0] is not None and ci[1] is not None:
        r += f" [{_r(ci[0])}, {_r(ci[1])}]"
    return r


def summary_lines(doc, focus_wanted=None):
    """The headline as plain text lines (the terminal's form of the report's headline table)."""
    focus, why = pick_focus(doc, focus_wanted)
    if focus is None:
        return [f"headline: {why}"]
    rows = focus_summary(doc, focus)
    if not rows:
        return [f"headline: no cell has runs of {focus} and another lock"]
    n = max(r["faster"] + r["tied"] + r["slower"] for r in rows)
    lines = [f"{focus} against every other lock ({n} cells; faster/slower = ranges apart and "
             f"p < 0.05; focus: {why}):"]
    w = max(len(r["other"]) for r in rows)
    for r in rows:
        txt = (f"  vs {r['other']:<{w}}  faster in {r['faster']}, tied in {r['tied']}, "
               f"slower in {r['slower']}")
        if r["lost"]:
            txt += "; loses " + "; ".join(f"{lab} ({fmt_ratio_ci(ratio, ci)})"
                                          for lab, ratio, ci, _ in r["lost"])
        if r["busy_cells"]:
            txt += f"  [{r['busy_cells']} of these cells measured on a busy machine]"
        lines.append(txt)
    return lines
