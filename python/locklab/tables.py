"""Tables and sentences in the style of the seed-001 changelog.

    baseline +fix delta
    average 1,394,938 1,616,781 +15.9 %
    ...
    The distributions do not overlap: the slowest +fix run (1.50 M) is faster than every baseline run.

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


def overlap_sentence(cand, base, hib=True, cand_name="candidate", base_name="baseline"):
    """The explicit overlap sentence the seed-001 changelog ends its table with."""
    c_worst, c_best = (min(cand), max(cand)) if hib else (max(cand), min(cand))
    b_worst, b_best = (min(base), max(base)) if hib else (max(base), min(base))

    def better(x, y):
        return x > y if hib else x < y

    if better(c_worst, b_best):
        return (f"The distributions do not overlap: the slowest {cand_name} run "
                f"({fmt_short(c_worst)}) is faster than every {base_name} run "
                f"(fastest {fmt_short(b_best)}).")
    if better(b_worst, c_best):
        return (f"The distributions do not overlap: the fastest {cand_name} run "
                f"({fmt_short(c_best)}) is slower than every {base_name} run "
                f"(slowest {fmt_short(b_worst)}).")
    lo, hi = min(base), max(base)
    inside = sum(1 for v in cand if lo <= v <= hi)
    return (f"The distributions overlap: {inside} of {len(cand)} {cand_name} runs fall inside the "
            f"{base_name} range [{fmt_short(lo)}, {fmt_short(hi)}] "
            f"({cand_name} range [{fmt_short(min(cand))}, {fmt_short(max(cand))}]).")


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
    # Wide enough that a cell table does not wrap when stdout is a file or a pipe.
    return Console(stderr=stderr, width=None if Console().is_terminal else 132,
                   highlight=False)


def cell_table(doc, cell):
    """rich Table of one bench cell: per lock min/median/mean/max, ratio vs baseline, CI, p, verdict."""
    hib = doc.get("higher_is_better", True)
    base = doc.get("baseline")
    arrow = "higher is better" if hib else "lower is better"
    t = Table(title=escape(f"{doc['workload']} {fmt_params(cell['params'])}: {doc['metric']} "
                           f"({arrow})"),
              title_justify="left")
    for col in ("lock", "n", "min", "median", "mean", "max", f"ratio vs {base}", "95% CI", "p",
                "verdict"):
        t.add_column(col, justify="left" if col in ("lock", "verdict") else "right")
    comps = {c["lock"]: c for c in cell.get("comparisons", [])}
    for lock, s in cell["stats"].items():
        c = comps.get(lock)
        name = lock + (" *" if lock == cell.get("winner") else "")
        if lock == base:
            ratio, ci, p, v = "1 (baseline)", "", "", ""
        elif c:
            ratio, ci, p, v = fmt_ratio(c["ratio"]), fmt_ci(c["ratio_ci95"]), \
                fmt_p(c["mannwhitney_p"]), c["verdict"]
        else:
            ratio = ci = p = v = "-"
        t.add_row(*(escape(x) for x in (name, str(s["n"]), fmt_num(s["min"]), fmt_num(s["median"]),
                                        fmt_num(s["mean"]), fmt_num(s["max"]), ratio, ci, p, v)))
    return t


def cell_sentences(doc, cell):
    """The winner line and one overlap sentence per lock compared with the baseline."""
    hib = doc.get("higher_is_better", True)
    out = []
    w = cell.get("winner")
    if w is not None:
        tied = cell.get("winner_tied_with") or []
        out.append(f"winner: {w}" + (f" (tied with {', '.join(tied)})" if tied else
                                     " (ahead of every other lock)" if len(cell["stats"]) > 1
                                     else ""))
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


def print_cells(doc, con=None):
    con = con or console()
    fixed = doc.get("fixed") or {}
    if fixed:
        con.print(escape(f"{doc['workload']}: fixed {fmt_params(fixed)}"), soft_wrap=True)
    for cell in doc["cells"]:
        con.print(cell_table(doc, cell))
        for line in cell_sentences(doc, cell):
            con.print("  " + escape(line), soft_wrap=True)
        con.print()


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
