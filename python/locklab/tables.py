"""Tables and sentences in the style of the seed-001 changelog.

    baseline +fix delta
    average 1,394,938 1,616,781 +15.9 %
    ...
    None of the 5 +fix runs falls inside the baseline's range [1.20 M, 1.45 M]: the slowest +fix run
    (1.50 M) is faster than the fastest baseline run.

Numbers: big values with thousands separators (1,394,938), short forms in sentences (1.50 M), ratios to
three decimals, p-values to three significant digits.  "slowest/fastest" follow higher_is_better: for a
lower-is-better metric (a latency) the slowest run is the largest value.
"""

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import stats as st


def fmt_num(x):
    """1394938.2 -> '1,394,938'; 12.34 -> '12.3'; 0.01234 -> '0.0123'; None -> '-'."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    x = float(x)
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}" if x.is_integer() else f"{x:.1f}"
    if a == 0:
        return "0"
    return f"{x:.3g}"


def fmt_short(x):
    """1502741 -> '1.50 M', 12345 -> '12.3 k', 12.3 -> '12.3'."""
    if x is None:
        return "-"
    a = abs(float(x))
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{x / div:#.3g} {unit}" if a / div < 100 else f"{x / div:.0f} {unit}"
    return fmt_num(x)


def fmt_pct(p):
    return "-" if p is None else f"{p:+.1f} %"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.3f}"


def fmt_ci(ci):
    if not ci or ci[0] is None or ci[1] is None:
        return "-"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def fmt_p(p):
    if p is None:
        return "-"
    return f"{p:.3g}" if p >= 0.001 else f"{p:.1e}"


def fmt_params(params):
    return " ".join(f"{k}={v}" for k, v in params.items()) or "(one cell)"


def _possessive(name):
    return f"the {name}'s" if name in ("baseline", "candidate") else f"{name}'s"


def _runs(n, name):
    return f"{name} run" if n == 1 else f"{name} runs"


def _fall(k, n):
    """('none of the 5', 'falls'), ('1 of the 5', 'falls'), ('3 of the 5', 'fall'), ('all 5', ...)."""
    if k == 0:
        return f"none of the {n}", "falls"
    if k == n:
        return {1: ("the one", "falls"), 2: ("both", "fall")}.get(n, (f"all {n}", "fall"))
    return f"{k} of the {n}", "falls" if k == 1 else "fall"


def overlap_sentence(cand, base, hib=True, cand_name="candidate", base_name="baseline"):
    """Where the candidate's runs lie against the baseline's range, in plain words:

        None of the 5 candidate runs falls inside the baseline's range [1.00 M, 1.60 M]: the slowest
        candidate run (1.70 M) is faster than the fastest baseline run.
        3 of the 5 candidate runs fall inside the baseline's range [1.00 M, 1.60 M].
    """
    lo, hi = min(base), max(base)
    n = len(cand)
    inside = sum(1 for v in cand if lo <= v <= hi)
    who, verb = _fall(inside, n)
    head = (f"{who} {_runs(n, cand_name)} {verb} inside {_possessive(base_name)} range "
            f"[{fmt_short(lo)}, {fmt_short(hi)}]")
    head = head[0].upper() + head[1:]
    c_worst, c_best = (min(cand), max(cand)) if hib else (max(cand), min(cand))
    b_worst, b_best = (min(base), max(base)) if hib else (max(base), min(base))

    def better(x, y):
        return x > y if hib else x < y

    if better(c_worst, b_best):
        return (f"{head}: the slowest {cand_name} run ({fmt_short(c_worst)}) is faster than the "
                f"fastest {base_name} run.")
    if better(b_worst, c_best):
        return (f"{head}: the fastest {cand_name} run ({fmt_short(c_best)}) is slower than the "
                f"slowest {base_name} run.")
    if inside == 0:
        clo, chi = min(cand), max(cand)
        k = sum(1 for v in base if clo <= v <= chi)
        bwho, bverb = _fall(k, len(base))
        return (f"{head}, but the ranges overlap: {bwho} {_runs(len(base), base_name)} {bverb} "
                f"inside {_possessive(cand_name)} range [{fmt_short(clo)}, {fmt_short(chi)}].")
    return head + "."


def changelog_rows(cand, base):
    """[(label, baseline, candidate, delta %)] for average, median, min, max."""
    c, b = st.summarize(cand), st.summarize(base)
    return [(label, b[k], c[k], st.pct_delta(c[k], b[k]))
            for label, k in (("average", "mean"), ("median", "median"), ("min", "min"),
                             ("max", "max"))]


def changelog_block(cand, base, hib=True, cand_name="candidate", base_name="baseline",
                    comparison=None):
    """Plain-text block ready to paste into a changelog (aligned columns, no colour)."""
    rows = changelog_rows(cand, base)
    cells = [["", base_name, cand_name, "delta"]] + [
        [label, fmt_num(bv), fmt_num(cv), fmt_pct(d)] for label, bv, cv, d in rows]
    w = [max(len(r[i]) for r in cells) for i in range(4)]
    lines = ["  ".join([r[0].ljust(w[0])] + [r[i].rjust(w[i]) for i in (1, 2, 3)]).rstrip()
             for r in cells]
    c = comparison or st.compare_samples(cand, base, hib)
    lines.append(f"ratio of medians {fmt_ratio(c['ratio'])} (95% CI {fmt_ci(c['ratio_ci95'])}), "
                 f"Mann-Whitney p = {fmt_p(c['mannwhitney_p'])}, n = {len(base)} vs {len(cand)}: "
                 f"{c['verdict']}")
    lines.append(overlap_sentence(cand, base, hib, cand_name, base_name))
    return "\n".join(lines)


def console(stderr=False):
    """The console tables print to: the terminal's width, $COLUMNS when set, else 132 (a file or a
    pipe gets tables that do not wrap)."""
    import os
    term = Console(stderr=stderr).is_terminal
    width = None if term or os.environ.get("COLUMNS", "").isdigit() else 132
    return Console(stderr=stderr, width=width, highlight=False)


# Table layouts, widest first; print_cells() takes the first that fits the console.  Numbers are
# never wrapped or cut: a layout that would need it is skipped.
#   wide     lock | n | min | median | mean | max | ratio vs BASE | 95% CI | p | verdict
#   compact  lock | median | min..max | vs BASE [95% CI] | p | verdict   (short numbers: 24.2M)
#   abbrev   compact with long lock names cut to a short label, and a legend under the table
#   long     one block of lines per lock (no table)
LAYOUTS = ("wide", "compact", "abbrev", "long")


def _short_num(x):
    """24213111 -> '24.2M', 1234.5 -> '1.23k', 12.34 -> '12.3' (for narrow tables)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    a = abs(float(x))
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")):
        if a >= div:
            v = x / div
            return (f"{v:.0f}" if abs(v) >= 99.95 else f"{v:#.3g}") + unit
    return "0" if a == 0 else f"{x:.3g}"


def _marks(cell, lock):
    """'*' for the cell's winner, '=' for a lock tied with it, '!' for flagged runs."""
    m = ""
    if lock == cell.get("winner"):
        m = "*"
    elif lock in (cell.get("winner_tied_with") or []):
        m = "="
    if (cell["stats"].get(lock) or {}).get("flags"):
        m += "!"
    return m


def abbreviations(locks):
    """{lock: short label}: names of 8 characters or fewer stay; a longer one keeps its first part
    and the initials of the others ('rust_parking_lot' -> 'rust_pl', 'glibc_normal' -> 'glibc_n'),
    or its first 7 characters; labels are made unique."""
    out, used = {}, set()
    for lk in locks:
        parts = [p for p in lk.replace("-", "_").split("_") if p]
        if len(lk) <= 8:
            lab = lk
        elif len(parts) > 1 and len(parts[0]) <= 6:
            lab = parts[0] + "_" + "".join(p[0] for p in parts[1:])
        else:
            lab = lk[:7]
        base, i = lab, 2
        while lab in used:
            lab = f"{base}{i}"
            i += 1
        used.add(lab)
        out[lk] = lab
    return out


def _cell_title(doc, cell):
    hib = doc.get("higher_is_better", True)
    arrow = "higher is better" if hib else "lower is better"
    title = f"{doc['workload']} {fmt_params(cell['params'])}: {doc['metric']} ({arrow})"
    b, j = cell.get("busy_runs"), cell.get("judged_runs")
    if isinstance(b, int) and b:
        title += f" - BUSY MACHINE: {b} of {j} runs"
    return title


def _short_ci(ci):
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f"[{ci[0]:.2f},{ci[1]:.2f}]"


def cell_table(doc, cell, layout="wide"):
    """One bench cell as a rich Table in one of LAYOUTS (not "long"): (table, legend lines)."""
    base = doc.get("baseline")
    comps = {c["lock"]: c for c in cell.get("comparisons", [])}
    names = {lk: lk for lk in cell["stats"]}
    legend = []
    if layout == "abbrev":
        names = abbreviations(list(cell["stats"]))
        legend.append("locks: " + ", ".join(f"{v} = {k}" for k, v in names.items() if v != k))
    t = Table(title=escape(_cell_title(doc, cell)), title_justify="left")
    short = layout in ("compact", "abbrev")
    if short:
        cols = ("lock", "median", "min..max", f"vs {names.get(base, base)} [95% CI]", "p",
                "verdict")
    else:
        cols = ("lock", "n", "min", "median", "mean", "max", f"vs {base}", "95% CI", "p",
                "verdict")
    for col in cols:
        t.add_column(escape(col), justify="left" if col in ("lock", "verdict") else "right",
                     no_wrap=True)
    fmt = _short_num if short else fmt_num
    for lock, s in cell["stats"].items():
        c = comps.get(lock)
        m = _marks(cell, lock)
        name = names[lock] + (f" {m}" if m else "")
        if lock == base:
            ratio, ci, p, v = "baseline" if short else "1 (baseline)", "", "", ""
        elif c:
            ratio, ci, p, v = fmt_ratio(c["ratio"]), fmt_ci(c["ratio_ci95"]), \
                fmt_p(c["mannwhitney_p"]), c["verdict"]
            if short:
                ratio = "-" if c["ratio"] is None else \
                    f"{c['ratio']:.2f} {_short_ci(c['ratio_ci95'])}".strip()
        else:
            ratio = ci = p = v = "-"
        if short:
            row = (name, fmt(s["median"]), f"{fmt(s['min'])}..{fmt(s['max'])}", ratio, p, v)
        else:
            row = (name, str(s["n"]), fmt(s["min"]), fmt(s["median"]), fmt(s["mean"]),
                   fmt(s["max"]), ratio, ci, p, v)
        t.add_row(*(escape(x) for x in row))
    return t, legend


def _fits(con, table):
    from rich.measure import Measurement
    # measured unbounded: rich caps a measurement at the console width
    return Measurement.get(con, con.options.update_width(10**4), table).maximum <= con.width


def cell_long(doc, cell):
    """The long form of a cell: one block of lines per lock, for consoles too narrow for a table."""
    base = doc.get("baseline")
    comps = {c["lock"]: c for c in cell.get("comparisons", [])}
    lines = [_cell_title(doc, cell)]
    for lock, s in cell["stats"].items():
        m = _marks(cell, lock)
        lines.append(f"  {lock}{' ' + m if m else ''}")
        lines.append(f"    median {fmt_num(s['median'])} (n {s['n']}, min {fmt_num(s['min'])}, "
                     f"max {fmt_num(s['max'])})")
        c = comps.get(lock)
        if lock == base:
            lines.append("    the baseline")
        elif c:
            lines.append(f"    vs {base}: {fmt_ratio(c['ratio'])} {fmt_ci(c['ratio_ci95'])}, "
                         f"p {fmt_p(c['mannwhitney_p'])}, {c['verdict']}")
    return lines


def choose_layout(con, doc, cell):
    """The widest of LAYOUTS whose table (and legend) fits the console."""
    for layout in LAYOUTS[:-1]:
        t, legend = cell_table(doc, cell, layout)
        if _fits(con, t):
            return layout
    return "long"


def marks_legend(doc):
    """What the marks next to the lock names and the verdicts mean (printed under the tables)."""
    cells = doc["cells"]
    out = ["* = the cell's winner (best median); = = tied with the winner"]
    if any((s or {}).get("flags") for c in cells for s in c["stats"].values()):
        out[0] += "; ! = some runs did zero operations or had a short window (see the cell)"
    if any(c.get("comparisons") for c in cells):
        out.append(f"verdict vs {doc.get('baseline')}: faster/slower only when the [min, max] "
                   "ranges do not overlap and Mann-Whitney p < 0.05, otherwise tied")
    return out


def cell_sentences(doc, cell):
    """The winner line, the busy note, flagged runs, and one overlap sentence per lock compared
    with the baseline."""
    hib = doc.get("higher_is_better", True)
    out = []
    w = cell.get("winner")
    if w is not None:
        tied = cell.get("winner_tied_with") or []
        out.append(f"winner: {w}" + (f" (tied with {', '.join(tied)})" if tied else
                                     " (ahead of every other lock)" if len(cell["stats"]) > 1
                                     else ""))
    b, j = cell.get("busy_runs"), cell.get("judged_runs")
    if isinstance(b, int) and b:
        out.append(f"busy machine: {b} of {j} runs were measured while other processes used "
                   "the CPU (the file's busy_rule); these verdicts may be the neighbours'")
    for lock, s in cell["stats"].items():
        for f in s.get("flags") or []:
            out.append(f"{lock}: {f}")
    base = doc.get("baseline")
    nmin = min((s["n"] for s in cell["stats"].values()), default=0)
    if cell.get("comparisons") and nmin < 4:
        out.append(f"note: n = {nmin} per lock is too few for a verdict (the two-sided "
                   "Mann-Whitney test needs n >= 4 per side to reach p < 0.05): use --repeat 4+")
    for c in cell.get("comparisons", []):
        s, b = cell["stats"][c["lock"]], cell["stats"][base]
        out.append(f"{c['lock']} vs {base}: " +
                   overlap_sentence(s["values"], b["values"], hib, c["lock"], base))
    return out


def _say(con, text, indent=""):
    """Print prose wrapped at spaces to the console's width (never inside a number or a name),
    continuation lines indented two more."""
    import textwrap
    lines = textwrap.wrap(text, width=max(20, con.width), initial_indent=indent,
                          subsequent_indent=indent + "  ", break_long_words=False,
                          break_on_hyphens=False) or [""]
    for ln in lines:
        con.print(escape(ln), soft_wrap=True)


def print_cells(doc, con=None, focus=None, claims=True):
    """Every cell's table (in the widest layout the console fits), what the marks mean, then the
    headline: the focus lock against every other lock, and the file's own claims (demo)."""
    from . import headline, hostload
    con = con or console()
    fixed = doc.get("fixed") or {}
    if doc.get("status") == "interrupted":
        _say(con, f"{doc['workload']}: INTERRUPTED after {len(doc['runs'])} of "
                  f"{doc.get('planned_runs', '?')} runs ({doc.get('status_reason', '')})")
    if fixed:
        _say(con, f"{doc['workload']}: fixed {fmt_params(fixed)}")
    for cell in doc["cells"]:
        if not cell["stats"]:
            _say(con, f"{doc['workload']} {fmt_params(cell['params'])}: no runs")
            con.print()
            continue
        layout = choose_layout(con, doc, cell)
        if layout == "long":
            for line in cell_long(doc, cell):
                ind = line[:len(line) - len(line.lstrip())]
                _say(con, line.strip(), ind)
        else:
            t, legend = cell_table(doc, cell, layout)
            con.print(t)
            for line in legend:
                _say(con, line, "  ")
        for line in cell_sentences(doc, cell):
            _say(con, line, "  ")
        con.print()
    if any(c["stats"] for c in doc["cells"]):
        for line in marks_legend(doc):
            _say(con, line)
    speed = hostload.speed_sentence(doc.get("runs") or [])
    if speed:
        _say(con, speed)
    if len(headline.locks_of(doc)) > 1:
        con.print()
        for line in headline.summary_lines(doc, focus):
            ind = line[:len(line) - len(line.lstrip())]
            _say(con, line.strip(), ind)
    if claims and doc.get("headline"):
        print_claims(doc, con)


def print_claims(doc, con=None):
    """The file's headline claims (locklab demo), one line each (wrapped at spaces)."""
    con = con or console()
    h = doc["headline"]
    con.print()
    _say(con, h.get("title") or "Headline")
    for c in h["claims"]:
        _say(con, c["text"], "  ")


def list_table(list_doc):
    t = Table(title="locklab registry (from locklab-bench list --json)", title_justify="left")
    for col in ("family", "name", "opstype", "available", "description"):
        t.add_column(col)
    for a in list_doc.get("algorithms", []):
        avail = "yes" if a.get("available", True) else "no"
        desc = a.get("desc") or ""
        if not a.get("available", True) and a.get("missing"):
            desc = f"{desc} [missing: {a['missing']}]"
        t.add_row(*(escape(str(x)) for x in (a.get("family", ""), a.get("name", ""),
                                             a.get("opstype", ""), avail, desc)))
    return t
