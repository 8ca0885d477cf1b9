"""``locklab report``: a static HTML report, with matplotlib plots, from one or more results files.

Input: results files written by ``locklab bench ... --out F`` (schema ``locklab-results/1``, validated
against schema/results.schema.json on read; see ``results.py``).  Output: a directory holding
``index.html`` and one PNG per figure next to it.  The page needs no network: CSS is inline, images
are relative files.

The page opens with the HEADLINE: per results file, the claims it carries (``locklab demo``), then
the focus lock (lk_mutex, or ``--focus NAME``) against every other lock: in how many cells it is
faster, tied and slower, and the cells it loses with their ratios (headline.py).  Then per results
file (one section each), when the data is there:

    heatmap              cells x locks, colour = median / the cell's best median, each square marked
                         with its verdict against the cell's winner (the first figure)
    throughput vs axis   x = threads (or the first swept axis; the retry limit for lockref), one panel
                         per value of the other axes, one line per lock, the focus lock bold and the
                         others muted, point = median, bar = min..max
    per-cell bars        one small panel per cell, one bar per lock, bar = median, whisker = ci95
    latency CDF          the representative cell (most threads, then the largest other axis values):
                         one curve per lock from its median-p99 repeat; CDF and tail (1-F), log x
    fairness, CPU/op     fairness_jain, and cpu_ns_per_op on a log scale, vs the x axis
    comparison table     grouped by cell (winner once per cell): ratio vs baseline with its CI,
                         Mann-Whitney p, whether the min..max ranges overlap, verdict, flags
    lockref sweep        x = retry limit: ops/s median and mean CAS failures per success
    futex-hash layouts   per layout and lock throughput, plus bytes per bucket when reported
    machine, command     the machine description and, under every figure, the command that made it

Runs that did zero operations or measured a window shorter than planned are flagged (heatmap "!",
table "flags") and a zero median is not drawn as 0.  Cells measured on a busy machine are marked.
The page ends with summary.md, when one lies next to the results files (suite, demo).

Advise files (``locklab advise``, schema ``locklab-advise/1``, validated against
schema/advise.schema.json on read) get a section each after the results files: the recommendation
(also in the headline), how much the program's mutexes waited on glibc, a figure of every run of
every lock (box and strip plot of the metric, and of the CPU per run), the ranked table against glibc,
the profile's top contended locks for glibc and the best-ranked lock, and why the advice stopped
when it did.

Robustness: a workload this module does not know gets the generic figures; an optional field that
is missing skips the figure or the table cell that needs it, never the page.  Input that is not a
valid results file raises ReportError (a FileError), which the CLI prints as
"locklab: FILE: <problem>" with exit status 2; run() does the same by itself.

The module never times anything and knows no list of algorithms: lock names, axes and metrics all
come from the files.  Matplotlib is used through its Agg canvas only (no pyplot, no display).
"""

import argparse
import html
import json
import math
import os
import re
import sys
from pathlib import Path

from . import advise as advise_mod
from . import headline
from . import results as results_mod
from .errors import FileError, UsageError
from .runner import run_flags

SCHEMA_RESULTS = results_mod.SCHEMA

# A page with hundreds of panels is unreadable and slow to draw: larger sweeps are cut and the cut
# is said on the page.
MAX_PANELS = 12
MAX_CELL_PANELS = 36
MAX_TABLE_ROWS = 400

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
            "#17becf", "#bcbd22", "#7f7f7f"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]


# A results file that cannot be read, or an output directory that cannot be written: "FILE: problem",
# exit status 2 (the same exception the rest of locklab raises for files).
ReportError = FileError


# ---------------------------------------------------------------------------------------------
# loading and validation
# ---------------------------------------------------------------------------------------------

def load_results(path):
    """Read one results file and validate it against the published schema (results.py); returns
    the dict or raises ReportError naming the file and the field."""
    return results_mod.load(path)


# ---------------------------------------------------------------------------------------------
# tolerant accessors: anything ill-typed reads as "missing"
# ---------------------------------------------------------------------------------------------

def _num(v):
    """A finite float, or None for anything else (bools, strings, NaN, missing)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _dict(v):
    return v if isinstance(v, dict) else {}


def _list(v):
    return v if isinstance(v, list) else []


def _pair(v):
    """[lo, hi] of two finite numbers, else None."""
    if isinstance(v, (list, tuple)) and len(v) == 2:
        lo, hi = _num(v[0]), _num(v[1])
        if lo is not None and hi is not None:
            return (min(lo, hi), max(lo, hi))
    return None


def _hashable(v):
    """A key for a param value: numbers compare by value (1 == 1.0), other JSON by its text."""
    n = _num(v)
    if n is not None:
        return ("n", n)
    if isinstance(v, str):
        return ("s", v)
    return ("j", json.dumps(v, sort_keys=True))


def _fmt_val(v):
    n = _num(v)
    if n is not None:
        return str(int(n)) if n == int(n) and abs(n) < 1e15 else f"{n:g}"
    if isinstance(v, str):
        return v
    return json.dumps(v)


def _fmt_si(v, unit=""):
    n = _num(v)
    if n is None:
        return "-"
    a = abs(n)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= scale:
            return f"{n / scale:.3g}{prefix}{unit}"
    return f"{n:.3g}{unit}"


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


# ---------------------------------------------------------------------------------------------
# the model of one results file
# ---------------------------------------------------------------------------------------------

class Results:
    """One results file, with its cells indexed by axis values and its runs by (cell, lock)."""

    def __init__(self, path, doc):
        self.path = str(path)
        self.doc = doc
        self.workload = doc["workload"]
        self.command = doc.get("command") if isinstance(doc.get("command"), str) else None
        self.metric = doc.get("metric") if isinstance(doc.get("metric"), str) else "ops_per_sec"
        hib = doc.get("higher_is_better")
        self.higher_is_better = hib if isinstance(hib, bool) else True
        self.baseline = doc.get("baseline") if isinstance(doc.get("baseline"), str) else None
        self.machine = _dict(doc.get("machine"))
        self.cells = [c for c in _list(doc.get("cells"))
                      if isinstance(c, dict) and isinstance(c.get("params", {}), dict)]
        self.focus = None  # set by write_report: the lock the headline and the plots single out
        self.focus_wanted = None  # --focus as given
        self.runs = [r for r in _list(doc.get("runs")) if isinstance(r, dict)]

        # Locks: the declared order first, then any that only appear in cells or runs.
        locks = [x for x in _list(doc.get("locks")) if isinstance(x, str)]
        for c in self.cells:
            for name in _dict(c.get("stats")):
                if name not in locks:
                    locks.append(name)
        for r in self.runs:
            name = self._run_lock(r)
            if name is not None and name not in locks:
                locks.append(name)
        self.locks = locks

        # Axes: declared order and values, then anything seen in cells; an axis with one value
        # is kept (it labels cells) but is not swept.
        axes = {}
        for k, vs in _dict(doc.get("axes")).items():
            if isinstance(vs, list):
                axes[k] = [v for v in vs if isinstance(v, (int, float, str)) and
                           not isinstance(v, bool)]
        for c in self.cells:
            for k, v in _dict(c.get("params")).items():
                lst = axes.setdefault(k, [])
                if _hashable(v) not in {_hashable(x) for x in lst}:
                    lst.append(v)
        self.axes = {k: vs for k, vs in axes.items() if vs}

    @staticmethod
    def _run_lock(run):
        if isinstance(run.get("lock"), str):
            return run["lock"]
        lk = _dict(run.get("params")).get("lock")
        return lk if isinstance(lk, str) else None

    # -- cells ---------------------------------------------------------------------------------

    def cell_params(self, cell):
        return _dict(cell.get("params"))

    def stat(self, cell, lock):
        return _dict(_dict(cell.get("stats")).get(lock))

    def cell_label(self, cell, sep=", ", skip=()):
        p = self.cell_params(cell)
        parts = [f"{k}={_fmt_val(v)}" for k, v in p.items() if k not in skip]
        return sep.join(parts) if parts else "(single cell)"

    def find_cell(self, params):
        want = {k: _hashable(v) for k, v in params.items()}
        for c in self.cells:
            p = self.cell_params(c)
            if all(k in p and _hashable(p[k]) == hv for k, hv in want.items()):
                return c
        return None

    def runs_for(self, cell, lock):
        """Runs of `lock` whose params match every axis value of `cell`."""
        p = {k: _hashable(v) for k, v in self.cell_params(cell).items()}
        out = []
        for r in self.runs:
            if self._run_lock(r) != lock:
                continue
            rp = _dict(r.get("params"))
            if all(k in rp and _hashable(rp[k]) == hv for k, hv in p.items()):
                out.append(r)
        return out

    def secondary(self, cell, lock, key):
        """Median of result[key] over the cell's runs: the cell's `secondary` if present, else
        computed from the runs."""
        v = _num(_dict(self.stat(cell, lock).get("secondary")).get(key))
        if v is not None:
            return v
        return _median([_num(_dict(r.get("result")).get(key)) for r in self.runs_for(cell, lock)])

    def run_mean(self, cell, lock, key):
        return _mean([_num(_dict(r.get("result")).get(key)) for r in self.runs_for(cell, lock)])

    # -- axes ----------------------------------------------------------------------------------

    def swept(self):
        return [k for k, vs in self.axes.items() if len(vs) > 1]

    def pick_x(self, prefer=("threads",)):
        """The axis for the x of line plots: a preferred name if swept, else the first swept axis
        (numeric axes first), else None."""
        swept = self.swept()
        for name in prefer:
            for k in swept:
                if k == name or (name.startswith("~") and name[1:] in k.lower()):
                    return k
        numeric = [k for k in swept if all(_num(v) is not None for v in self.axes[k])]
        if numeric:
            return numeric[0]
        return swept[0] if swept else None

    def sorted_values(self, axis):
        vs = list(self.axes.get(axis, []))
        if vs and all(_num(v) is not None for v in vs):
            return sorted(vs, key=_num)
        return vs

    def panels(self, x_axis, exclude=()):
        """Combinations of the swept axes other than x (each a dict), in axis order; [{}] when
        there are none.  Returns (combos, total_before_cut)."""
        others = [k for k in self.swept() if k != x_axis and k not in exclude]
        combos = [{}]
        for k in others:
            combos = [dict(c, **{k: v}) for c in combos for v in self.sorted_values(k)]
        # keep only combinations that some cell has
        real = [c for c in combos if not c or any(self._matches(cell, c) for cell in self.cells)]
        return real[:MAX_PANELS], len(real)

    def _matches(self, cell, combo):
        p = self.cell_params(cell)
        return all(k in p and _hashable(p[k]) == _hashable(v) for k, v in combo.items())

    def cells_in(self, combo):
        return [c for c in self.cells if self._matches(c, combo)]

    def lock_style(self, lock):
        i = self.locks.index(lock) if lock in self.locks else len(self.locks)
        return dict(color=_PALETTE[i % len(_PALETTE)], marker=_MARKERS[i % len(_MARKERS)],
                    linestyle="--" if lock == self.baseline else "-")

    def line_style(self, lock):
        """lock_style for line plots: the focus lock drawn bold and on top, the others muted."""
        st = self.lock_style(lock)
        if self.focus is None or lock == self.focus:
            st.update(linewidth=3.0 if lock == self.focus else 1.6, alpha=1.0, zorder=5,
                      markersize=6)
        else:
            st.update(linewidth=1.1, alpha=0.45, zorder=2, markersize=4)
        return st

    # -- what cannot be plotted as it is -------------------------------------------------------

    def flags(self, cell, lock):
        """The stat's flags (zero operations, short windows); computed from the runs for files
        written before locklab recorded them."""
        f = self.stat(cell, lock).get("flags")
        if isinstance(f, list):
            return [x for x in f if isinstance(x, str)]
        runs = [r for r in self.runs_for(cell, lock) if isinstance(r.get("result"), dict)]
        return run_flags(runs) if runs else []

    def zero_ops(self, cell, lock):
        return any("zero operations" in f for f in self.flags(cell, lock))

    def busy(self, cell):
        b = cell.get("busy_runs")
        return b if isinstance(b, int) and not isinstance(b, bool) else 0


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------

class Figures:
    """Writes PNGs into out_dir and remembers them for the page."""

    def __init__(self, out_dir, strict=False):
        self.out_dir = Path(out_dir)
        self.count = 0
        self.strict = strict

    def new(self, ncols, nrows, w=4.6, h=3.4, squeeze=False):
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = Figure(figsize=(max(6.0, w * ncols), h * nrows), dpi=100,
                     layout="constrained")
        FigureCanvasAgg(fig)
        axs = fig.subplots(nrows, ncols, squeeze=False)
        return fig, axs

    def save(self, fig, slug):
        self.count += 1
        name = f"fig{self.count:03d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', slug)[:60]}.png"
        fig.savefig(self.out_dir / name, format="png")
        return name


def _grid(n, max_cols=3):
    ncols = min(max_cols, max(1, n))
    return ncols, (n + ncols - 1) // ncols


def _hide_unused(axs, n):
    flat = [a for row in axs for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return flat[:n]


def _eng_axis(ax, axis="y"):
    from matplotlib.ticker import EngFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(EngFormatter(sep=""))


def _log_ns_axis(ax, axis="x"):
    """Log axis of nanoseconds labelled 30, 100, 1k, 10k; minor ticks labelled only when the data
    spans less than about a decade (otherwise they would crowd)."""
    from matplotlib.ticker import EngFormatter, NullFormatter

    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    a.set_major_formatter(EngFormatter(sep=""))
    narrow = axis == "x" and lo > 0 and hi / lo < 30  # a y axis has no room for minor labels
    a.set_minor_formatter(EngFormatter(sep="") if narrow else NullFormatter())


def _categorical_x(ax, values, name):
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels([_fmt_val(v) for v in values])
    ax.set_xlabel(name)
    ax.set_xlim(-0.4, len(values) - 0.6)


def _legend(fig, axs_flat, ncol=None):
    handles, labels = [], []
    for a in axs_flat:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center",
                   ncol=ncol or min(len(labels), 5), frameon=False)


def _suptitle(fig, text):
    """A figure title wrapped to the figure's width (about 11 characters per inch at 11 pt)."""
    import textwrap

    width = max(40, int(fig.get_figwidth() * 11))
    fig.suptitle("\n".join(textwrap.wrap(text, width)), fontsize=11)


def _metric_label(res):
    return f"{res.metric} ({'higher' if res.higher_is_better else 'lower'} is better)"


def fig_metric_vs_axis(res, figs, x_axis, ylabel=None, title=None, slug="throughput"):
    """One panel per combination of the other axes; one line per lock (the focus lock bold, the
    others muted); median with min..max.  A median of runs that did zero operations is not drawn
    as 0: the point is left out and said under the figure."""
    xs = res.sorted_values(x_axis)
    combos, total = res.panels(x_axis)
    ncols, nrows = _grid(len(combos))
    fig, axs = figs.new(ncols, nrows)
    flat = _hide_unused(axs, len(combos))
    drawn = False
    left_out = []
    for ax, combo in zip(flat, combos):
        for lock in res.locks:
            px, py, lo, hi = [], [], [], []
            for i, xv in enumerate(xs):
                cell = res.find_cell(dict(combo, **{x_axis: xv}))
                if cell is None:
                    continue
                st = res.stat(cell, lock)
                med = _num(st.get("median"))
                if med is None:
                    continue
                if res.zero_ops(cell, lock) and med == 0:
                    left_out.append(f"{lock} at {res.cell_label(cell)}")
                    continue
                mn, mx = _num(st.get("min")), _num(st.get("max"))
                px.append(i)
                py.append(med)
                lo.append(med - mn if mn is not None and mn <= med else 0.0)
                hi.append(mx - med if mx is not None and mx >= med else 0.0)
            if px:
                ax.errorbar(px, py, yerr=[lo, hi], label=lock, capsize=3,
                            **res.line_style(lock))
                drawn = True
        _categorical_x(ax, xs, x_axis)
        ax.set_ylabel(ylabel or res.metric)
        _eng_axis(ax)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_title(", ".join(f"{k}={_fmt_val(v)}" for k, v in combo.items()) or res.workload,
                     fontsize=10)
    if not drawn:
        return None, "no cell has a median for any lock"
    focus = f"; bold = {res.focus}" if res.focus else ""
    _suptitle(fig, title or f"{res.workload}: {_metric_label(res)} vs {x_axis} "
                 f"(median, bars = min..max{focus})")
    _legend(fig, flat)
    notes = []
    if total > len(combos):
        notes.append(f"showing {len(combos)} of {total} panels")
    if left_out:
        notes.append("not drawn, their runs did zero operations: " + "; ".join(left_out))
    return figs.save(fig, f"{res.workload}-{slug}-vs-{x_axis}"), "; ".join(notes) or None


def _ratio_to_best(res, cell):
    """{lock: median / best median} (best / median for lower-is-better): 1 = the cell's best."""
    meds = {lk: _num(res.stat(cell, lk).get("median")) for lk in res.locks}
    meds = {lk: m for lk, m in meds.items() if m is not None}
    if not meds:
        return {}
    if res.higher_is_better:
        best = max(meds.values())
        return {lk: (m / best if best > 0 else None) for lk, m in meds.items()}
    best = min(meds.values())
    return {lk: (best / m if m > 0 else None) for lk, m in meds.items()}


def fig_heatmap(res, figs):
    """Cells x locks; colour = median / the cell's best median; each square marked with its
    verdict against the cell's winner: * best, = tied with the best, nothing = behind it (ranges
    apart and p < 0.05); flagged squares (zero operations, short windows) are hatched."""
    import numpy as np
    from matplotlib.colors import Normalize

    if len(res.locks) < 2:
        return None, "one lock only: nothing to compare"
    cells = [c for c in res.cells if _ratio_to_best(res, c)][:MAX_CELL_PANELS]
    if not cells:
        return None, "no cell has a median"
    nrow, ncol = len(cells), len(res.locks)
    grid = np.full((nrow, ncol), np.nan)
    fig, axs = figs.new(1, 1, w=max(6.0, 1.05 * ncol + 3.2), h=max(2.2, 0.42 * nrow + 1.9))
    ax = axs[0][0]
    for i, cell in enumerate(cells):
        for j, lock in enumerate(res.locks):
            r = _ratio_to_best(res, cell).get(lock)
            if r is not None:
                grid[i, j] = r
    cmap = _cmap("RdYlGn").with_extremes(bad="#d9d9d9")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=Normalize(0.0, 1.0),
                   aspect="auto")
    for i, cell in enumerate(cells):
        win = cell.get("winner")
        tied = [t for t in _list(cell.get("winner_tied_with")) if isinstance(t, str)]
        for j, lock in enumerate(res.locks):
            v = grid[i, j]
            if not np.isfinite(v):
                ax.text(j, i, "-", ha="center", va="center", fontsize=8, color="#555555")
                continue
            mark = "*" if lock == win else "=" if lock in tied else ""
            txt = (f"{v:.2f}" if v >= 0.005 else "0" if v == 0 else "<.01") + mark
            if res.flags(cell, lock):
                txt += "!"
                ax.add_patch(_rect(j, i))
            ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                    fontweight="bold" if lock == res.focus else "normal",
                    color="white" if v < 0.18 or v > 0.9 else "black")
    ax.set_xticks(range(ncol))
    ax.set_xticklabels(res.locks, rotation=30, ha="right", fontsize=8)
    for lab in ax.get_xticklabels():
        if lab.get_text() == res.focus:
            lab.set_fontweight("bold")
    ax.set_yticks(range(nrow))
    ax.set_yticklabels([res.cell_label(c) + (f"  (busy: {res.busy(c)} runs)" if res.busy(c)
                                             else "") for c in cells], fontsize=8)
    if res.focus in res.locks:
        j = res.locks.index(res.focus)
        ax.axvline(j - 0.5, color="black", linewidth=1.5)
        ax.axvline(j + 0.5, color="black", linewidth=1.5)
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.set_label("median / best median of the cell" if res.higher_is_better
                 else "best median / median of the cell", fontsize=8)
    _suptitle(fig, f"{res.workload}: each lock against the best of its cell ({_metric_label(res)}); "
                   "* = best, = = tied with the best, no mark = behind it, ! = flagged runs")
    note = None
    if len(res.cells) > len(cells):
        note = f"showing {len(cells)} of {len(res.cells)} cells"
    return figs.save(fig, f"{res.workload}-heatmap"), note


def _cmap(name):
    import matplotlib
    return matplotlib.colormaps[name]


def _rect(j, i):
    from matplotlib.patches import Rectangle
    return Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#444444",
                     linewidth=0)


def fig_cell_bars(res, figs):
    """One small panel per cell; one bar per lock: median, whisker = ci95 (min..max if no CI)."""
    cells = res.cells[:MAX_CELL_PANELS]
    cells = [c for c in cells if any(_num(res.stat(c, lk).get("median")) is not None
                                     for lk in res.locks)]
    if not cells:
        return None, "no cell has a median for any lock"
    ncols, nrows = _grid(len(cells), max_cols=5 if len(cells) > 12 else 4)
    fig, axs = figs.new(ncols, nrows, w=3.3, h=2.6)
    flat = _hide_unused(axs, len(cells))
    for ax, cell in zip(flat, cells):
        winner = cell.get("winner")
        for i, lock in enumerate(res.locks):
            st = res.stat(cell, lock)
            med = _num(st.get("median"))
            if med is None:
                continue
            ci = _pair(st.get("ci95"))
            if ci is None:
                mn, mx = _num(st.get("min")), _num(st.get("max"))
                ci = (mn, mx) if mn is not None and mx is not None else (med, med)
            err = [[max(0.0, med - ci[0])], [max(0.0, ci[1] - med)]]
            style = res.lock_style(lock)
            ax.bar(i, med, yerr=err, color=style["color"], capsize=3, label=lock,
                   hatch="//" if lock == res.baseline else None,
                   edgecolor="black" if lock == winner else style["color"],
                   linewidth=1.8 if lock == winner else 0.5, alpha=0.85)
        ax.set_xticks([])
        ax.set_xlim(-0.6, max(len(res.locks), 3) - 0.4)
        ax.set_title(res.cell_label(cell, sep="  "), fontsize=9)
        _eng_axis(ax)
        ax.tick_params(labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    _suptitle(fig, f"{res.workload}: {_metric_label(res)} per cell (median, whisker = 95% CI; "
                 "hatched = baseline, black edge = winner)")
    _legend(fig, flat)
    note = None
    if len(res.cells) > MAX_CELL_PANELS:
        note = f"showing the first {MAX_CELL_PANELS} of {len(res.cells)} cells"
    return figs.save(fig, f"{res.workload}-cells"), note


def _cdf_points(run):
    lat = _dict(_dict(run.get("result")).get("latency"))
    pts = []
    for pt in _list(lat.get("cdf")):
        if isinstance(pt, (list, tuple)) and len(pt) >= 2:
            x, f = _num(pt[0]), _num(pt[1])
            if x is not None and f is not None and x > 0 and 0 <= f <= 1:
                pts.append((x, f))
    pts.sort()
    return pts if len(pts) >= 2 else []  # one point draws nothing


def representative_cell(res):
    """The cell with the most locks that have latency CDFs; ties go to the most threads, then the
    largest values of the other axes in axis order."""
    best, best_key = None, None
    order = (["threads"] if "threads" in res.axes else []) + \
            [k for k in res.axes if k != "threads"]
    for cell in res.cells:
        n = sum(1 for lk in res.locks if any(_cdf_points(r) for r in res.runs_for(cell, lk)))
        if n == 0:
            continue
        p = res.cell_params(cell)
        key = (n,) + tuple(_num(p.get(k)) if _num(p.get(k)) is not None else -math.inf
                           for k in order)
        if best_key is None or key > best_key:
            best, best_key = cell, key
    return best


def fig_latency_cdf(res, figs):
    cell = representative_cell(res)
    if cell is None:
        return None, "no run has a latency CDF (result.latency.cdf)", None
    fig, axs = figs.new(2, 1, w=5.2, h=3.8)
    ax_cdf, ax_tail = axs[0]
    for lock in res.locks:
        runs = [r for r in res.runs_for(cell, lock) if _cdf_points(r)]
        if not runs:
            continue
        # The repeat whose p99 is the median of the repeats' p99: a typical run, not a mixture.
        def p99(r):
            v = _num(_dict(_dict(r.get("result")).get("latency")).get("p99_ns"))
            return v if v is not None else _cdf_points(r)[-1][0]
        runs.sort(key=p99)
        run = runs[(len(runs) - 1) // 2]
        pts = _cdf_points(run)
        xs = [x for x, _ in pts]
        fs = [f for _, f in pts]
        style = res.lock_style(lock)
        kw = dict(color=style["color"], linestyle=style["linestyle"], linewidth=1.6)
        ax_cdf.step(xs, fs, where="post", label=lock, **kw)
        tail = [(x, 1.0 - f) for x, f in pts if 1.0 - f > 0]
        if tail:
            ax_tail.step([x for x, _ in tail], [t for _, t in tail], where="post", label=lock,
                         **kw)
    ax_cdf.set_xscale("log")
    ax_cdf.set_ylim(0, 1.02)
    ax_cdf.set_xlabel("acquisition latency (ns, log)")
    ax_cdf.set_ylabel("fraction of acquisitions <= x")
    ax_cdf.axhline(0.5, color="grey", linewidth=0.6, linestyle=":")
    ax_cdf.axhline(0.99, color="grey", linewidth=0.6, linestyle=":")
    ax_cdf.set_title("CDF", fontsize=10)
    ax_tail.set_xscale("log")
    ax_tail.set_yscale("log")
    ax_tail.set_xlabel("acquisition latency (ns, log)")
    ax_tail.set_ylabel("fraction of acquisitions > x (log)")
    ax_tail.set_title("tail (1 - CDF)", fontsize=10)
    for a in (ax_cdf, ax_tail):
        a.grid(True, which="both", alpha=0.25)
        _log_ns_axis(a)
    label = res.cell_label(cell)
    _suptitle(fig, f"{res.workload}: acquisition latency at {label} "
                 "(per lock: the repeat with the median p99)")
    _legend(fig, [ax_cdf])
    return figs.save(fig, f"{res.workload}-latency"), None, label


def fig_fairness_cpu(res, figs, x_axis):
    keys = [("fairness_jain", "Jain fairness (1 = fair)"), ("cpu_ns_per_op", "CPU ns per op (log)")]
    present = [(k, lab) for k, lab in keys
               if any(res.secondary(c, lk, k) is not None for c in res.cells for lk in res.locks)]
    if not present:
        return None, "no fairness_jain or cpu_ns_per_op in the cells or runs"
    xs = res.sorted_values(x_axis) if x_axis else [None]
    combos, total = res.panels(x_axis) if x_axis else ([{}], 1)
    combos = combos[:6]
    fig, axs = figs.new(len(combos), len(present), w=3.6, h=2.9)
    for col, combo in enumerate(combos):
        for row, (key, ylabel) in enumerate(present):
            ax = axs[row][col]
            for li, lock in enumerate(res.locks):
                px, py = [], []
                for i, xv in enumerate(xs):
                    cell = res.find_cell(dict(combo, **({x_axis: xv} if x_axis else {})))
                    if cell is None:
                        continue
                    v = res.secondary(cell, lock, key)
                    if v is not None:
                        px.append(i)
                        py.append(v)
                if key == "cpu_ns_per_op":  # log scale: a collapsed lock must not flatten the rest
                    px, py = [x for x, y in zip(px, py) if y > 0], [y for y in py if y > 0]
                if px and x_axis:
                    ax.plot(px, py, label=lock, **res.line_style(lock))
                elif px:  # nothing swept: one bar per lock
                    ax.bar(li, py[0], label=lock, color=res.lock_style(lock)["color"], alpha=0.85,
                           hatch="//" if lock == res.baseline else None)
            if x_axis:
                _categorical_x(ax, xs, x_axis)
            else:
                ax.set_xticks(range(len(res.locks)))
                ax.set_xticklabels(res.locks, fontsize=8)
                ax.set_xlim(-0.6, max(len(res.locks), 3) - 0.4)
            if key == "fairness_jain":
                ax.set_ylim(0, 1.05)
            elif ax.has_data():
                ax.set_yscale("log")
                _log_ns_axis(ax, "y")
            if col == 0:
                ax.set_ylabel(ylabel, fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.tick_params(labelsize=8)
            if row == 0:
                ax.set_title(", ".join(f"{k}={_fmt_val(v)}" for k, v in combo.items())
                             or res.workload, fontsize=9)
    _suptitle(fig, f"{res.workload}: fairness and CPU cost per operation (cell medians)")
    _legend(fig, [a for row in axs for a in row])
    note = f"showing {len(combos)} of {total} panels" if total > len(combos) else None
    return figs.save(fig, f"{res.workload}-fairness-cpu"), note


def _retry_axis(res):
    for k in res.swept():
        if "retr" in k.lower():
            return k
    for k in res.swept():
        if "limit" in k.lower():
            return k
    return None


def fig_lockref(res, figs):
    """x = retry limit; ops/s (median) and CAS failures per success (mean over runs); one line per
    lock and combination of the other axes."""
    x_axis = _retry_axis(res)
    if x_axis is None:
        return None, "no retry-limit axis was swept (an axis whose name contains 'retr')"
    xs = res.sorted_values(x_axis)
    combos, total = res.panels(x_axis)
    fig, axs = figs.new(2, 1, w=5.4, h=3.8)
    ax_ops, ax_cas = axs[0]
    linestyles = ["-", "--", ":", "-."]
    drawn = False
    for ci, combo in enumerate(combos):
        for lock in res.locks:
            style = res.lock_style(lock)
            tag = ", ".join(f"{k}={_fmt_val(v)}" for k, v in combo.items())
            label = f"{lock} {tag}".strip() if len(res.locks) > 1 else (tag or lock)
            ops, cas = ([], []), ([], [])
            for i, xv in enumerate(xs):
                cell = res.find_cell(dict(combo, **{x_axis: xv}))
                if cell is None:
                    continue
                med = _num(res.stat(cell, lock).get("median"))
                if med is not None:
                    ops[0].append(i)
                    ops[1].append(med)
                c = res.run_mean(cell, lock, "cas_failures_per_success")
                if c is None:
                    c = res.secondary(cell, lock, "cas_failures_per_success")
                if c is not None:
                    cas[0].append(i)
                    cas[1].append(c)
            color = _PALETTE[(ci + res.locks.index(lock) * len(combos)) % len(_PALETTE)] \
                if len(combos) > 1 else style["color"]
            kw = dict(color=color, marker=_MARKERS[ci % len(_MARKERS)],
                      linestyle=linestyles[res.locks.index(lock) % len(linestyles)],
                      linewidth=1.5, markersize=5)
            if ops[0]:
                ax_ops.plot(*ops, label=label, **kw)
                drawn = True
            if cas[0]:
                ax_cas.plot(*cas, label=label, **kw)
                drawn = True
    if not drawn:
        return None, "no ops/s median or cas_failures_per_success in the lockref cells"
    for a in (ax_ops, ax_cas):
        _categorical_x(a, xs, x_axis)
        a.grid(True, alpha=0.3)
    ax_ops.set_ylabel(res.metric)
    _eng_axis(ax_ops)
    ax_ops.set_ylim(bottom=0)
    ax_ops.set_title(f"{res.metric} (median)", fontsize=10)
    ax_cas.set_ylabel("CAS failures per success")
    ax_cas.set_ylim(bottom=0)
    ax_cas.set_title("CAS failures per success (mean of runs)", fontsize=10)
    _suptitle(fig, f"{res.workload}: retry-limit sweep")
    _legend(fig, [ax_ops, ax_cas], ncol=4)
    note = f"showing {len(combos)} of {total} line groups" if total > len(combos) else None
    return figs.save(fig, f"{res.workload}-retry-sweep"), note


def _layout_axis(res):
    for k in res.axes:
        if "layout" in k.lower():
            return k
    return None


def fig_futex_hash(res, figs):
    """Bars per layout (x) and lock; one panel per combination of the other swept axes."""
    layout = _layout_axis(res)
    groups = res.sorted_values(layout) if layout else [None]
    combos, total = res.panels(layout, exclude=(layout,)) if layout else res.panels(None)
    ncols, nrows = _grid(len(combos))
    fig, axs = figs.new(ncols, nrows, w=max(4.6, 1.0 * len(groups) * max(1, len(res.locks))),
                        h=3.4)
    flat = _hide_unused(axs, len(combos))
    nl = max(1, len(res.locks))
    # Without a layout axis the lock is the layout (futex-hash's --lock kernel,packed,split):
    # one bar per lock, labelled with its name.
    width = 0.8 / nl if layout else 0.8
    drawn = False
    for ax, combo in zip(flat, combos):
        for li, lock in enumerate(res.locks):
            for gi, g in enumerate(groups):
                cell = res.find_cell(dict(combo, **({layout: g} if layout else {})))
                if cell is None:
                    continue
                st = res.stat(cell, lock)
                med = _num(st.get("median"))
                if med is None:
                    continue
                ci = _pair(st.get("ci95")) or (med, med)
                ax.bar(gi - 0.4 + width * (li + 0.5) if layout else li, med, width=width,
                       yerr=[[max(0.0, med - ci[0])], [max(0.0, ci[1] - med)]],
                       color=res.lock_style(lock)["color"], capsize=2,
                       label=lock, alpha=0.85)
                drawn = True
        if layout:
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([_fmt_val(g) for g in groups], fontsize=8)
            ax.set_xlabel(layout)
        else:
            ax.set_xticks(range(len(res.locks)))
            ax.set_xticklabels(res.locks, fontsize=8)
            ax.set_xlabel("lock (layout)")
        ax.set_ylabel(res.metric)
        _eng_axis(ax)
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_title(", ".join(f"{k}={_fmt_val(v)}" for k, v in combo.items()) or res.workload,
                     fontsize=10)
    if not drawn:
        return None, "no futex-hash cell has a median"
    _suptitle(fig, f"{res.workload}: {_metric_label(res)} per layout and lock "
                 "(median, whisker = 95% CI)")
    _legend(fig, flat)
    note = f"showing {len(combos)} of {total} panels" if total > len(combos) else None
    return figs.save(fig, f"{res.workload}-layouts"), note


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
  color:#1a1a1a;background:#fafafa;line-height:1.45}
main{max-width:1200px;margin:0 auto;padding:1.2em 1.6em 3em}
h1{font-size:1.6em;margin:.4em 0 .2em}
h2{font-size:1.3em;margin:2em 0 .4em;padding-top:.6em;border-top:2px solid #ddd}
h3{font-size:1.05em;margin:1.6em 0 .4em}
figure{margin:1em 0 1.6em;background:#fff;border:1px solid #e2e2e2;border-radius:4px;padding:.6em}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{font-size:.85em;color:#444;margin-top:.4em}
pre,code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em}
pre{background:#f1f1f1;padding:.5em .7em;border-radius:3px;white-space:pre-wrap;
  word-break:break-all;margin:.3em 0}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0;background:#fff}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.faster td.verdict{color:#1a7f1a;font-weight:600}
tr.slower td.verdict{color:#b32020;font-weight:600}
tr.tied td.verdict{color:#666}
.note{color:#8a5a00;font-size:.85em}
.busy{color:#a33;font-weight:600}
tr.cellhead th{background:#e4ebf5;text-align:left;font-weight:normal}
td.flag{color:#a33;font-size:.9em}
td.faster{color:#1a7f1a;font-weight:600}
td.slower{color:#b32020;font-weight:600}
ul.claims{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em;
  background:#fff;border:1px solid #e2e2e2;border-radius:4px;padding:.6em 1em .6em 2em}
li.claim.faster{color:#1a7f1a} li.claim.slower{color:#b32020} li.claim.busy{color:#a33}
table.headline td:first-child{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace}
.summary table{font-size:.8em}
.meta{color:#555;font-size:.9em}
nav ul{margin:.3em 0;padding-left:1.4em}
.scroll{overflow-x:auto}
"""


def _e(s):
    return html.escape(str(s), quote=True)


MEASURED_MACHINE_FIELDS = ("pause_ns",)


def _machine_table(machine):
    if not machine:
        return "<p class=note>No machine description in this file.</p>"
    rows = []
    for k, v in machine.items():
        if isinstance(v, float):
            v = f"{v:g}"
        elif v is None:
            v = "-"
        elif not isinstance(v, (str, int)):
            v = json.dumps(v)
        rows.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    return "<table class=machine>" + "".join(rows) + "</table>"


def _figure_html(name, alt, caption, command):
    cmd = (f"<pre><code>{_e(command)}</code></pre>" if command
           else "<p class=note>This results file records no command.</p>")
    return (f"<figure><img src=\"{_e(name)}\" alt=\"{_e(alt)}\">"
            f"<figcaption>{_e(caption)}<br>Reproduce with:{cmd}</figcaption></figure>")


def _comparison_table(res):
    """Per cell (one header row: the cell, its winner and the locks tied with it, busy runs), one
    row per lock: n, median, ratio to the baseline with its CI, Mann-Whitney p, whether the min-max
    ranges overlap, the verdict, and the runs flagged as unusable."""
    head = ("<tr><th>lock</th><th>n</th><th>median</th><th>ratio to baseline<br>(median / "
            "median)</th><th>ratio 95% CI<br>(bootstrap)</th><th>Mann-Whitney p</th>"
            "<th>ranges overlap<br>(min..max)</th><th>verdict vs baseline</th><th>flags</th></tr>")
    rows, nrows = [], 0
    for cell in res.cells:
        comps = {c.get("lock"): c for c in _list(cell.get("comparisons")) if isinstance(c, dict)}
        winner = cell.get("winner") if isinstance(cell.get("winner"), str) else None
        tied = [t for t in _list(cell.get("winner_tied_with")) if isinstance(t, str)]
        locks = [lk for lk in res.locks if res.stat(cell, lk)]
        if not locks:
            continue
        wtxt = (f"winner <b>{_e(winner)}</b>" + (f", tied with {_e(', '.join(tied))}" if tied
                                                 else "")) if winner else "no winner"
        busy = res.busy(cell)
        btxt = (f" <span class=busy>busy machine: {busy} of {cell.get('judged_runs')} runs</span>"
                if busy else "")
        rows.append(f"<tr class=cellhead><th colspan=9>{_e(res.cell_label(cell))} &mdash; "
                    f"{wtxt}{btxt}</th></tr>")
        for lock in locks:
            st = res.stat(cell, lock)
            comp = comps.get(lock, {})
            base = comp.get("baseline") if isinstance(comp.get("baseline"), str) else res.baseline
            ratio = _num(comp.get("ratio"))
            ci = _pair(comp.get("ratio_ci95"))
            p = _num(comp.get("mannwhitney_p"))
            ov = comp.get("overlap")
            verdict = comp.get("verdict") if isinstance(comp.get("verdict"), str) else \
                ("baseline" if lock == base else "-")
            cls = verdict if verdict in ("faster", "slower", "tied") else ""
            n = st.get("n") if isinstance(st.get("n"), int) else "-"
            mark = " *" if lock == winner else " =" if lock in tied else ""
            flags = "; ".join(res.flags(cell, lock))
            name = f"<b>{_e(lock)}</b>" if lock == res.focus else _e(lock)
            rows.append(
                f"<tr class=\"{_e(cls)}\"><td>{name}{_e(mark)}</td><td class=num>{_e(n)}</td>"
                f"<td class=num>{_e(_fmt_si(st.get('median')))}</td>"
                f"<td class=num>{'-' if ratio is None else f'{ratio:.3f}'}</td>"
                f"<td class=num>{'-' if ci is None else f'{ci[0]:.3f} .. {ci[1]:.3f}'}</td>"
                f"<td class=num>{'-' if p is None else f'{p:.3g}'}</td>"
                f"<td>{'yes' if ov is True else 'no' if ov is False else '-'}</td>"
                f"<td class=verdict>{_e(verdict)}</td><td class=flag>{_e(flags)}</td></tr>")
            nrows += 1
        if nrows >= MAX_TABLE_ROWS:
            break
    if not rows:
        return "<p class=note>No cells in this file.</p>"
    note = ""
    total = sum(1 for c in res.cells for lk in res.locks if res.stat(c, lk))
    if total > nrows:
        note = f"<p class=note>showing {nrows} of {total} rows</p>"
    legend = ("<p class=meta>Baseline: <code>" + _e(res.baseline or "-") + "</code>. * = the "
              "cell's winner (best median), = = tied with it. A verdict is faster or slower only "
              "when the [min, max] ranges of the two locks' runs do not overlap and Mann-Whitney "
              "p &lt; 0.05; otherwise tied.</p>")
    return (f"{legend}<div class=scroll><table class=comparisons>{head}{''.join(rows)}</table>"
            f"</div>{note}")


def _bytes_table(res):
    """futex-hash: bytes per bucket (median over runs) and throughput per layout/lock."""
    layout = _layout_axis(res)
    rows = []
    seen = set()
    for cell in res.cells:
        for lock in res.locks:
            # futex-hash reports "bucket_bytes"; "bytes_per_bucket" is accepted too
            bpb = _median([_num(_dict(r.get("result")).get("bytes_per_bucket",
                                                         _dict(r.get("result")).get("bucket_bytes")))
                           for r in res.runs_for(cell, lock)])
            if bpb is None:
                bpb = _num(_dict(res.stat(cell, lock).get("secondary")).get("bytes_per_bucket"))
            if bpb is None:
                continue
            lay = _fmt_val(res.cell_params(cell).get(layout)) if layout else "-"
            key = (lay, lock)
            if key in seen:
                continue
            seen.add(key)
            rows.append(f"<tr><td>{_e(lay)}</td><td>{_e(lock)}</td>"
                        f"<td class=num>{_e(_fmt_val(bpb))}</td></tr>")
    if not rows:
        return ""
    return ("<h3>Memory cost per bucket</h3><table class=bytes><tr><th>layout</th><th>lock</th>"
            "<th>bytes per bucket</th></tr>" + "".join(rows) + "</table>")


def _section(res, idx, figs, strict, show_machine=True):
    out = []
    anchor = f"s{idx}"
    title = f"{res.workload}"
    out.append(f"<h2 id=\"{anchor}\">{_e(title)} <span class=meta>({_e(res.path)})</span></h2>")
    created = res.doc.get("created")
    meta = [f"metric <code>{_e(_metric_label(res))}</code>"]
    if res.baseline:
        meta.append(f"baseline <code>{_e(res.baseline)}</code>")
    if res.locks:
        meta.append("locks " + ", ".join(f"<code>{_e(x)}</code>" for x in res.locks))
    if isinstance(created, str):
        meta.append(f"created {_e(created)}")
    out.append(f"<p class=meta>{'; '.join(meta)}</p>")
    axes = "; ".join(f"{_e(k)} = {_e(', '.join(_fmt_val(v) for v in vs))}"
                     for k, vs in res.axes.items())
    fixed = _dict(res.doc.get("fixed"))
    fixed_txt = ", ".join(f"{_e(k)}={_e(_fmt_val(v))}" for k, v in fixed.items())
    out.append(f"<p class=meta>axes: {axes or 'none'}" +
               (f"<br>fixed: {fixed_txt}" if fixed_txt else "") + "</p>")
    if res.command:
        out.append(f"<p class=meta>Command:</p><pre><code>{_e(res.command)}</code></pre>")
    if res.doc.get("status") == "interrupted":
        out.append(f"<p class=busy>Interrupted after {len(res.runs)} of "
                   f"{_e(res.doc.get('planned_runs', '?'))} runs "
                   f"({_e(res.doc.get('status_reason', ''))}): cells may lack locks or repeats.</p>")
    judged = [r for r in res.runs if isinstance(_dict(r.get("host")).get("busy"), bool)]
    nbusy = sum(1 for r in judged if r["host"]["busy"])
    if judged:
        rule = res.doc.get("busy_rule") if isinstance(res.doc.get("busy_rule"), str) else ""
        cls = "busy" if nbusy else "meta"
        out.append(f"<p class={cls}>Machine load: {nbusy} of {len(res.runs)} runs were measured "
                   f"on a busy machine{' (marked in the heatmap and the table)' if nbusy else ''}"
                   f". Rule: {_e(rule)}.</p>")
    if show_machine:
        out.append("<h3>Machine</h3>" + _machine_table(res.machine))
    else:
        out.append("<p class=meta>Machine: as described at the top of the page.</p>")

    notes = []

    def attempt(what, fn, *a):
        try:
            return fn(*a)
        except Exception as e:  # the page must survive data this module did not foresee
            if strict:
                raise
            notes.append(f"{what}: not drawn ({type(e).__name__}: {e})")
            return None

    def emit(what, result, caption):
        if result is None:
            return
        name, note = result[0], result[1]
        if name is None:
            notes.append(f"{what}: skipped, {note}")
            return
        if note:
            caption += f" ({note})"
        out.append(_figure_html(name, f"{res.workload}: {what}", caption, res.command))

    wl = res.workload.lower()
    is_lockref = wl == "lockref" or any(
        "cas_failures_per_success" in _dict(r.get("result")) for r in res.runs)
    is_futex_hash = wl == "futex-hash"
    retry = _retry_axis(res) if is_lockref else None
    x_axis = res.pick_x(("threads",) if not retry else (retry, "threads"))

    out.append("<h3>Figures</h3>")
    emit("heatmap", attempt("heatmap", fig_heatmap, res, figs),
         "Every lock against the best lock of each cell: colour and number = median / the "
         "cell's best median (1.00 = best); * = the cell's winner, = = statistically tied with "
         "it, no mark = behind it (ranges apart and p < 0.05); ! = some runs did zero operations "
         "or had a short window; grey = no runs." + (f" The focus lock, {res.focus}, is framed "
                                                     "and bold." if res.focus else ""))
    if is_lockref:
        emit("retry-limit sweep", attempt("retry-limit sweep", fig_lockref, res, figs),
             "Lockref retry-limit sweep: left, throughput median per retry limit; right, mean "
             "CAS failures per successful update.")
    if is_futex_hash:
        emit("layouts", attempt("layouts", fig_futex_hash, res, figs),
             "Throughput per futex-hash layout and lock.")
    if x_axis is not None:
        emit(f"{res.metric} vs {x_axis}",
             attempt("throughput", fig_metric_vs_axis, res, figs, x_axis),
             f"{res.metric} versus {x_axis}: one line per lock (dashed = baseline"
             f"{', bold = ' + res.focus + ', the others muted' if res.focus else ''}), point = "
             "median of the repeats, bar = min..max.")
    else:
        notes.append("throughput vs axis: skipped, no axis other than the lock was swept")
    emit("per-cell bars", attempt("per-cell bars", fig_cell_bars, res, figs),
         "Per cell: one bar per lock, median with its bootstrap 95% CI.")
    lat = attempt("latency CDF", fig_latency_cdf, res, figs)
    if lat is not None:
        emit("latency CDF", lat[:2],
             f"Acquisition-latency distribution at the representative cell ({lat[2]}): the cell "
             "with the most threads (then the largest other axis values) whose runs recorded "
             "latency." if lat[0] else "")
    emit("fairness and CPU per op", attempt("fairness/CPU", fig_fairness_cpu, res, figs, x_axis),
         "Jain fairness index of per-thread operation counts (1 = every thread did the same "
         "work) and CPU time (user + sys) per operation, per lock, on a log scale (a lock that "
         "collapses does not flatten the others).")
    out.append("<h3>Every lock against the baseline, cell by cell</h3>")
    out.append(_comparison_table(res))
    if is_futex_hash or any("bytes_per_bucket" in _dict(r.get("result")) or
                            "bucket_bytes" in _dict(r.get("result")) for r in res.runs):
        try:
            out.append(_bytes_table(res))
        except Exception as e:
            if strict:
                raise
            notes.append(f"bytes per bucket: not shown ({type(e).__name__}: {e})")
    if notes:
        out.append("<h3>Not shown</h3><ul class=note>" +
                   "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    return anchor, title, "\n".join(out)


def _headline_html(loaded, advised=()):
    """The page's first section: per results file, its own claims (locklab demo) and the focus lock
    against every other lock: faster / tied / slower cell counts and the cells it loses; per advise
    file, its recommendation."""
    out = ["<h2 id=headline>Headline</h2>"]
    for i, (path, doc) in enumerate(advised):
        out.append(f"<h3><a href=\"#a{i}\">advise: {_e(_advise_prog(doc))}</a> "
                   f"<span class=meta>({_e(path)})</span></h3>")
        out.append(f"<ul class=claims><li class=\"claim {_advise_class(doc)}\">"
                   f"{_e(_advise_sentence(doc))}</li></ul>")
    for i, res in enumerate(loaded):
        out.append(f"<h3><a href=\"#s{i}\">{_e(res.workload)}</a> "
                   f"<span class=meta>({_e(res.path)})</span></h3>")
        h = _dict(res.doc.get("headline"))
        claims = [c for c in _list(h.get("claims")) if isinstance(c, dict)
                  and isinstance(c.get("text"), str)]
        if claims:
            if isinstance(h.get("title"), str):
                out.append(f"<p class=meta>{_e(h['title'])}</p>")
            items = []
            for c in claims:
                v = c.get("verdict") if isinstance(c.get("verdict"), str) else ""
                cls = v if v in ("faster", "slower", "tied") else "busy" if c.get("busy") else ""
                items.append(f"<li class=\"claim {_e(cls)}\">{_e(c['text'])}</li>")
            out.append("<ul class=claims>" + "".join(items) + "</ul>")
            if isinstance(h.get("busy_note"), str):
                out.append(f"<p class=busy>{_e(h['busy_note'])}</p>")
        focus, why = headline.pick_focus(res.doc, res.focus_wanted)
        if focus is None:
            out.append(f"<p class=note>{_e(why)}.</p>")
            continue
        rows = headline.focus_summary(res.doc, focus)
        if not rows:
            out.append(f"<p class=note>No cell has runs of {_e(focus)} and another lock.</p>")
            continue
        body = []
        for r in rows:
            lost = "; ".join(f"{lab} ({headline.fmt_ratio_ci(ratio, ci)})"
                             + (" [busy]" if busy else "") for lab, ratio, ci, busy in r["lost"])
            body.append(f"<tr><td>{_e(r['other'])}</td><td class=\"num faster\">{r['faster']}</td>"
                        f"<td class=num>{r['tied']}</td><td class=\"num slower\">{r['slower']}"
                        f"</td><td>{_e(lost) or '-'}</td><td class=num>{r['busy_cells'] or ''}"
                        "</td></tr>")
        out.append(f"<p class=meta><b>{_e(focus)}</b> against every other lock ({_e(why)}); "
                   "a cell counts as faster or slower only when the two locks' [min, max] ranges "
                   "do not overlap and Mann-Whitney p &lt; 0.05. Ratios are "
                   f"{_e(focus)}'s median over the other lock's, with a 95% bootstrap CI.</p>")
        out.append("<table class=headline><tr><th>against</th><th>faster</th><th>tied</th>"
                   f"<th>slower</th><th>cells {_e(focus)} loses (ratio [95% CI])</th>"
                   "<th>busy cells</th></tr>" + "".join(body) + "</table>")
    return "\n".join(out)


def find_summary(paths):
    """summary.md next to the results files (they all share one directory), or None."""
    dirs = {Path(p).resolve().parent for p in paths}
    if len(dirs) == 1:
        cand = Path(paths[0]).parent / "summary.md"  # as the user named the files
        if cand.is_file():
            return cand
    return None


def _md_inline(text):
    """Escape, then `code`, **bold** and [text](link) (links become their text: summary.md's
    relative links do not resolve from the report directory)."""
    t = _e(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", t)
    return t


def markdown_html(text):
    """The subset of Markdown summary.md uses: headings, paragraphs, lists, pipe tables, `code`,
    **bold**; anything else is shown as text."""
    out, para, table, items = [], [], [], []

    def flush():
        if para:
            out.append("<p>" + _md_inline(" ".join(para)) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_md_inline(x)}</li>" for x in items) + "</ul>")
            items.clear()
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|?[\s:|-]+\|?", r)]
            html_rows = []
            for k, r in enumerate(rows):
                cells = [c.strip() for c in r.strip().strip("|").split("|")]
                tag = "th" if k == 0 else "td"
                html_rows.append("<tr>" + "".join(f"<{tag}>{_md_inline(c)}</{tag}>"
                                                  for c in cells) + "</tr>")
            out.append("<div class=scroll><table class=md>" + "".join(html_rows) +
                       "</table></div>")
            table.clear()

    for line in text.splitlines():
        st = line.strip()
        if not st:
            flush()
        elif st.startswith("|"):
            if para or items:
                flush()
            table.append(st)
        elif re.match(r"#{1,6} ", st):
            flush()
            level = min(6, len(st) - len(st.lstrip("#")) + 2)  # under the page's h2
            out.append(f"<h{level}>{_md_inline(st.lstrip('#').strip())}</h{level}>")
        elif re.match(r"[-*] ", st):
            if para or table:
                flush()
            items.append(st[2:])
        elif items and line.startswith("  "):
            items[-1] += " " + st
        else:
            if table or items:
                flush()
            para.append(st)
    flush()
    return "\n".join(out)


def _prepare_out_dir(out_dir):
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ReportError(out_dir, "cannot create the output directory: it exists and is not a "
                                   "directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(out_dir, f"cannot create the output directory: "
                                   f"{e.strerror or e}") from None
    if not os.access(out, os.W_OK):
        raise ReportError(out_dir, "output directory is not writable")
    return out


def write_report(paths, out_dir, strict=None, focus=None, summary=None):
    """Write index.html and its PNGs into out_dir (created if needed); return index.html's path.

    paths: results files (locklab-results/1), each validated against the schema first.  Raises
    ReportError (exit 2) for a file that is not one, or for an output directory that cannot be
    written; reads every file before drawing, so a bad file leaves no half-written report.
    focus: the lock the headline compares with every other lock and the line plots draw bold
    (default lk_mutex, see headline.pick_focus).  summary: a summary.md to include (default: the
    one next to the results files, when they share a directory).  strict (default:
    $LOCKLAB_REPORT_STRICT set) makes a figure that fails to draw an exception instead of a note
    on the page; the tests use it.
    """
    if strict is None:
        strict = bool(os.environ.get("LOCKLAB_REPORT_STRICT"))
    paths = [str(p) for p in paths]
    if not paths:
        raise UsageError("report: no results files given")
    loaded, advised = [], []
    for p in paths:
        doc = results_mod.parse(p)
        if isinstance(doc, dict) and doc.get("schema") == advise_mod.SCHEMA:
            advised.append((p, advise_mod.validate(doc, p)))
        else:
            loaded.append(Results(p, results_mod.validate(doc, p)))
    for r in loaded:
        r.focus_wanted = focus
        r.focus = headline.pick_focus(r.doc, focus)[0]
    summary = Path(summary) if summary else find_summary(paths)
    summary_text = None
    if summary is not None:
        try:
            summary_text = summary.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ReportError(summary, f"cannot read: {getattr(e, 'strerror', None) or e}") \
                from None
    out = _prepare_out_dir(out_dir)
    try:
        for old in out.glob("fig[0-9][0-9][0-9]-*.png"):  # figures of an earlier report here
            old.unlink()

        # Machines are told apart by what describes them, not by what each run measures on them
        # (pause_ns is calibrated per run and always differs a little).
        machines, idents = [], []
        for r in loaded:
            ident = {k: v for k, v in r.machine.items() if k not in MEASURED_MACHINE_FIELDS}
            if ident not in idents:
                idents.append(ident)
                machines.append(r.machine)
        shared = len(machines) == 1 and bool(machines[0])

        figs = Figures(out, strict=strict)
        sections = [_section(r, i, figs, strict, show_machine=not shared)
                    for i, r in enumerate(loaded)]
        toc = "".join(f"<li><a href=\"#{a}\">{_e(t)}</a> <span class=meta>({_e(r.path)})</span>"
                      "</li>" for (a, t, _), r in zip(sections, loaded))
        adv_sections = [_advise_section(p, d, i, figs, strict) for i, (p, d) in enumerate(advised)]
        toc += "".join(f"<li><a href=\"#{a}\">{_e(t)}</a> <span class=meta>({_e(p)})</span></li>"
                       for (a, t, _), (p, _d) in zip(adv_sections, advised))
        sections += adv_sections
        if summary_text is not None:
            toc += f"<li><a href=\"#summary\">summary.md</a> <span class=meta>({_e(summary)})" \
                   "</span></li>"
        mach = ""
        if shared:
            mach = "<h3>Machine</h3>" + _machine_table(machines[0])
        elif len(machines) > 1:
            mach = (f"<p class=note>These files come from {len(machines)} different machines; "
                    "each section shows its own.</p>")
        summ = ""
        if summary_text is not None:
            summ = (f"<h2 id=summary>summary.md <span class=meta>({_e(summary)})</span></h2>"
                    f"<div class=summary>{markdown_html(summary_text)}</div>")
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>locklab report</title>
<style>{_CSS}</style></head>
<body><main>
<h1>locklab report</h1>
<p class=meta>{_file_count(loaded, advised)}, {figs.count} figures.
Medians of repeated runs; error bars as stated under each figure. Every figure lists the command
that reproduces it.</p>
{_headline_html(loaded, advised)}
<h2>Contents</h2>
<nav><ul>{toc}</ul></nav>
{mach}
{''.join(s for _, _, s in sections)}
{summ}
</main></body></html>
"""
        index = out / "index.html"
        tmp = out / ".index.html.tmp"
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(index)
    except OSError as e:
        raise ReportError(out_dir, f"cannot write the report: {e.strerror or e}") from None
    return str(index)


# ---------------------------------------------------------------------------------------------
# advise files (locklab advise: DIR/advise.json)
# ---------------------------------------------------------------------------------------------

def _file_count(loaded, advised):
    """'3 results files', '1 advise file', '2 results files, 1 advise file'."""
    parts = [f"{n} {what} file{'s' if n != 1 else ''}"
             for n, what in ((len(loaded), "results"), (len(advised), "advise")) if n]
    return ", ".join(parts)


def _advise_prog(doc):
    if isinstance(doc.get("app"), str):
        return doc["app"]
    prog = _list(doc.get("program"))
    return os.path.basename(prog[0]) if prog and isinstance(prog[0], str) else "?"


def _advise_sentence(doc):
    rec = _dict(doc.get("recommendation"))
    if isinstance(rec.get("sentence"), str):
        return rec["sentence"]
    st = _dict(doc.get("stopped"))
    if doc.get("outcome") == "stopped" and isinstance(st.get("reason"), str):
        return f"no advice: stopped: {st['reason']}"
    return f"no advice ({doc.get('outcome')})"


def _advise_class(doc):
    return {"recommend": "faster", "keep-glibc": "tied", "locks-do-not-matter": "tied",
            "stopped": "slower", "interrupted": "busy"}.get(doc.get("outcome"), "")


def _fmt_metric_value(v, unit):
    n = _num(v)
    if n is None:
        return "-"
    if unit == "s":
        from .shim import fmt_ns
        return fmt_ns(n * 1e9)
    return _fmt_si(n, f" {unit}" if unit else "")


def fig_advise(doc, figs):
    """Every run of every lock, in the ranking's order: left the metric (box: quartiles, whiskers
    1.5 IQR; points: the runs, jittered sideways; dashed: glibc's median), right the CPU time per
    run. The recommended lock is green, glibc grey."""
    import random

    m = _dict(doc.get("metric"))
    unit = m.get("unit") if isinstance(m.get("unit"), str) else ""
    stats = _dict(doc.get("stats"))
    ranking = [r for r in _list(doc.get("ranking")) if isinstance(r, dict)]
    order = [r["lock"] for r in ranking if isinstance(r.get("lock"), str)] or \
        [x for x in _list(doc.get("locks")) if isinstance(x, str)]
    vals = {lk: [v for v in (_num(x) for x in _list(_dict(stats.get(lk)).get("values")))
                 if v is not None] for lk in order}
    cpu = {lk: [c for c in (_num(_dict(t).get("cpu_s")) for t in _list(doc.get("runs"))
                            if _dict(t).get("variant") == lk and _dict(t).get("ok") is True)
                if c is not None] for lk in order}
    if not any(vals.values()):
        return None, "no lock has a successful run"
    rec = _dict(doc.get("recommendation")).get("lock")
    timed = _dict(doc.get("timed_out"))
    n = len(order)
    fig, axs = figs.new(2, 1, w=max(4.6, 0.62 * n + 1.6), h=3.8)
    rng = random.Random(20160622)   # the same jitter every time: diffable reports
    for ax, data, ylabel in ((axs[0][0], vals, f"{m.get('name', 'metric')}"
                              f"{f' ({unit})' if unit else ''}"),
                             (axs[0][1], cpu, "CPU time per run (s, user+sys)")):
        pos = [i for i, lk in enumerate(order) if data[lk]]
        if pos:
            bp = ax.boxplot([data[order[i]] for i in pos], positions=pos, widths=0.55,
                            showfliers=False, patch_artist=True, manage_ticks=False)
            for i, box in zip(pos, bp["boxes"]):
                lk = order[i]
                box.set(facecolor="#b7e4b7" if lk == rec else "#e0e0e0" if lk == "glibc"
                        else "#d6e4f5", edgecolor="#444444")
                if lk == "glibc":
                    box.set(linestyle="--")
        for i, lk in enumerate(order):
            ys = data[lk]
            xs = [i + rng.uniform(-0.16, 0.16) for _ in ys]
            ax.scatter(xs, ys, s=14, zorder=3, alpha=0.85,
                       color="#1a7f1a" if lk == rec else "#555555" if lk == "glibc" else "#1f77b4")
            if lk in timed:
                ax.annotate("timed out", (i, 0), xycoords=("data", "axes fraction"),
                            xytext=(0, 4), textcoords="offset points", ha="center", fontsize=7,
                            color="#b32020", rotation=90, va="bottom")
        base = data.get("glibc") or []
        if base:
            ax.axhline(sorted(base)[len(base) // 2] if len(base) % 2 else
                       sum(sorted(base)[len(base) // 2 - 1:len(base) // 2 + 1]) / 2,
                       color="#777777", linestyle="--", linewidth=1, zorder=1)
        ax.set_xticks(range(n))
        ax.set_xticklabels(order, rotation=30, ha="right", fontsize=8)
        for lab in ax.get_xticklabels():
            if lab.get_text() == rec:
                lab.set_fontweight("bold")
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylabel(ylabel)
        _eng_axis(ax)
        ax.grid(True, axis="y", alpha=0.3)
    better = "higher" if m.get("higher_is_better") else "lower"
    _suptitle(fig, f"advise {_advise_prog(doc)}: every run of every lock ({better} is better; "
                   "dashed line = glibc's median; green = the recommended lock)")
    return figs.save(fig, f"advise-{_advise_prog(doc)}"), None


def _advise_table(doc):
    m = _dict(doc.get("metric"))
    unit = m.get("unit") if isinstance(m.get("unit"), str) else ""
    rows = []
    for r in _list(doc.get("ranking")):
        if not isinstance(r, dict):
            continue
        v = r.get("verdict") if isinstance(r.get("verdict"), str) else "-"
        cls = v if v in ("faster", "slower", "tied") else ""
        ci, sci = _pair(r.get("ci95")), _pair(r.get("speedup_ci95"))
        sp, p = _num(r.get("speedup")), _num(r.get("mannwhitney_p"))
        ov = r.get("overlap")
        cpu = _num(r.get("cpu_s_median"))
        cit = "-" if ci is None else \
            f"{_fmt_metric_value(ci[0], unit)} .. {_fmt_metric_value(ci[1], unit)}"
        rows.append(
            f"<tr class=\"{cls}\"><td class=num>{_e(r.get('rank', '-'))}</td><td>{_e(r.get('lock'))}"
            f"</td><td class=num>{_e(r.get('n', '-'))}/{_e(r.get('runs', '-'))}</td>"
            f"<td class=num>{_e(_fmt_metric_value(r.get('median'), unit))}</td>"
            f"<td class=num>{_e(cit)}</td>"
            f"<td class=num>{'-' if sp is None else f'{sp:.2f}x'}</td>"
            f"<td class=num>{'-' if sci is None else f'{sci[0]:.2f} .. {sci[1]:.2f}'}</td>"
            f"<td class=num>{'-' if p is None else f'{p:.3g}'}</td>"
            f"<td>{'yes' if ov is True else 'no' if ov is False else '-'}</td>"
            f"<td class=verdict>{_e(v)}</td>"
            f"<td class=num>{'-' if cpu is None else _e(_fmt_metric_value(cpu, 's'))}</td></tr>")
    if not rows:
        return "<p class=note>No lock was measured.</p>"
    head = ("<tr><th>#</th><th>lock</th><th>runs</th><th>median</th><th>median 95% CI</th>"
            "<th>vs glibc<br>(times better)</th><th>its 95% CI<br>(bootstrap)</th>"
            "<th>Mann-Whitney p</th><th>ranges overlap<br>(min..max)</th><th>verdict</th>"
            "<th>CPU per run</th></tr>")
    return ("<p class=meta>Ranked by how many times better than glibc each lock's median is (glibc's "
            "median over the lock's for a lower-is-better metric). A verdict is faster or slower "
            "only when the [min, max] ranges of the runs do not overlap and Mann-Whitney p &lt; "
            "0.05; otherwise tied.</p><div class=scroll><table class=advise>" + head +
            "".join(rows) + "</table></div>")


def _profile_html(prof, title):
    from .shim import fmt_ns
    rows = [r for r in _list(prof.get("top")) if isinstance(r, dict)]
    run = _dict(prof.get("run"))
    wall = _num(run.get("wall_s"))
    title_txt = title + (f" (profile run: {fmt_ns(wall * 1e9)} wall)" if wall is not None else "")
    if not rows:
        return f"<h4>{_e(title_txt)}</h4><p class=note>No mutex in this profile.</p>"
    body = []
    for r in rows:
        pct = _num(r.get("contended_pct"))
        acq = r.get("acquisitions") if isinstance(r.get("acquisitions"), int) else 0
        body.append(
            f"<tr><td class=num>{_e(r.get('rank'))}</td><td><code>{_e(r.get('site_text'))}</code></td>"
            f"<td>{_e(r.get('command', ''))} [{_e(r.get('pid', ''))}]</td>"
            f"<td class=num>{acq:,}</td>"
            f"<td class=num>{'-' if pct is None else f'{pct:.1f} %'}</td>"
            f"<td class=num>{_e(fmt_ns(r.get('wait_ns_total')))}</td>"
            f"<td class=num>{_e(fmt_ns(r.get('wait_ns_max')))}</td>"
            f"<td class=num>{_e(fmt_ns(r.get('hold_ns_p99')))}</td></tr>")
    f = prof.get("file")
    src = f" <span class=meta>(full profile: {_e(f)})</span>" if isinstance(f, str) else ""
    return (f"<h4>{_e(title_txt)}{src}</h4><table class=profile><tr><th>#</th><th>call site</th>"
            "<th>process</th><th>acquisitions</th><th>contended</th><th>total wait</th>"
            "<th>max wait</th><th>hold p99</th></tr>" + "".join(body) + "</table>")


def _advise_section(path, doc, idx, figs, strict):
    anchor = f"a{idx}"
    title = f"advise: {_advise_prog(doc)}"
    out = [f"<h2 id=\"{anchor}\">{_e(title)} <span class=meta>({_e(path)})</span></h2>"]
    out.append(f"<ul class=claims><li class=\"claim {_advise_class(doc)}\"><b>"
               f"{_e(_advise_sentence(doc))}</b></li></ul>")
    m = _dict(doc.get("metric"))
    plan = _dict(doc.get("plan"))
    meta = [f"metric <code>{_e(m.get('name', '?'))}</code> "
            f"({'higher' if m.get('higher_is_better') else 'lower'} is better)",
            "locks " + ", ".join(f"<code>{_e(x)}</code>" for x in _list(doc.get("locks"))
                                 if isinstance(x, str))]
    if plan:
        meta.append(f"{_e(plan.get('repeat'))} runs per lock, interleaved and shuffled (seed "
                    f"{_e(doc.get('seed', 0))})")
    if isinstance(doc.get("check_output"), str):
        meta.append(f"output checked against glibc's: <code>{_e(doc['check_output'])}</code>")
    if isinstance(doc.get("created"), str):
        meta.append(f"created {_e(doc['created'])}")
    out.append(f"<p class=meta>{'; '.join(meta)}</p>")
    out.append(f"<p class=meta>Command:</p><pre><code>{_e(doc.get('command', ''))}</code></pre>")
    c = _dict(doc.get("contention"))
    if c:
        try:
            out.append(f"<p>{_e(advise_mod.contention_sentence(c))}.</p>")
        except (KeyError, TypeError, ValueError) as e:
            if strict:
                raise
            out.append(f"<p class=note>contention: not shown ({type(e).__name__})</p>")
    st = _dict(doc.get("stopped"))
    if st:
        out.append(f"<p class=busy>Stopped: {_e(st.get('reason', ''))}</p>")
        if isinstance(st.get("stderr_tail"), str) and st["stderr_tail"].strip():
            out.append(f"<pre><code>{_e(st['stderr_tail'][-1500:])}</code></pre>")
    timed = _dict(doc.get("timed_out"))
    if timed:
        out.append("<p class=busy>Timed out, left out of the remaining repeats: " +
                   ", ".join(f"{_e(k)} (repeat {_e(_dict(v).get('repeat'))}, after "
                             f"{_e(_dict(v).get('timeout_s'))} s)" for k, v in timed.items()) + "</p>")
    if _list(doc.get("runs")):
        try:
            name, note = fig_advise(doc, figs)
        except Exception as e:
            if strict:
                raise
            name, note = None, f"{type(e).__name__}: {e}"
        if name:
            out.append(_figure_html(name, f"{title}: distributions",
                                    "Every run of every lock, in the ranking's order: left the "
                                    "metric (box = quartiles, whiskers = 1.5 IQR, points = the runs), "
                                    "right the CPU time (user + sys) of each run; dashed line = "
                                    "glibc's median.", doc.get("command")))
        else:
            out.append(f"<p class=note>distributions: not drawn ({_e(note)})</p>")
        out.append("<h3>Every lock against glibc</h3>")
        out.append(_advise_table(doc))
    profs = _dict(doc.get("profiles"))
    if profs:
        out.append("<h3>Most contended locks (the lock profile)</h3>")
        for lock, prof in profs.items():
            if isinstance(prof, dict):
                out.append(_profile_html(prof, f"on {lock}"))
    mach = _dict(doc.get("machine"))
    if mach:
        out.append("<h3>Machine</h3>" + _machine_table(mach))
    return anchor, title, "\n".join(out)


# ---------------------------------------------------------------------------------------------
# CLI glue (cli.py calls these; `python -m locklab.report` works on its own too)
# ---------------------------------------------------------------------------------------------

def add_arguments(parser):
    """Add the report options to the `report` subparser."""
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="results files (locklab-results/1) from `locklab bench --out`, and "
                        "advise files (locklab-advise/1: DIR/advise.json from `locklab advise`)")
    parser.add_argument("-o", "--out", metavar="DIR", default="report",
                        help="output directory for index.html and its images (default: report)")
    parser.add_argument("--focus", metavar="NAME",
                        help="the lock the headline compares with every other lock and the plots "
                        "draw bold (default lk_mutex, where the file has it)")
    parser.add_argument("--summary", metavar="FILE",
                        help="a summary.md to include (default: summary.md next to the results "
                        "files, when they share a directory)")


def run(args):
    """Run `locklab report`; returns the exit status (2 for unreadable input)."""
    try:
        index = write_report(args.files, args.out, focus=getattr(args, "focus", None),
                             summary=getattr(args, "summary", None))
    except UsageError as e:
        print(f"locklab: {e.message}", file=sys.stderr)
        return e.status
    print(index)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="locklab report",
                                description="Write a static HTML report from results files.")
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
