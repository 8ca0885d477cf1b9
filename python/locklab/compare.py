"""`locklab compare A.json B.json`: A is the baseline, B the candidate.

Two results files are comparable when they ran the same workload with the same fixed parameters; a cell
is compared when its full parameter set (fixed + axes) appears in both files, and within it each lock
present in both (or only --lock NAME).  Anything else is refused (exit 2) with the differences listed,
because a delta between different experiments is not a delta.

For each (cell, lock) the output is the seed-001 changelog table (baseline / candidate / delta % for
average, median, min, max), the median ratio with its bootstrap CI, the Mann-Whitney p, the verdict, and
the overlap sentence.  Cells and locks that only one file has are listed at the end ("only in A: ..."),
never dropped silently.  Formats: changelog (plain text), markdown, csv (comparisons only), json.
"""

import csv
import io
import json

from . import stats as st
from . import tables
from .errors import UsageError
from .results import load


def _full_params(doc, cell):
    p = dict(doc.get("fixed", {}))
    p.update(cell["params"])
    p.pop("lock", None)
    return p


def _key(params):
    return tuple(sorted((k, json.dumps(v)) for k, v in params.items()))


def check_comparable(a, b, pa="A", pb="B"):
    """Raise UsageError listing why a and b are different experiments, if they are."""
    diffs = []
    if a["workload"] != b["workload"]:
        diffs.append(f"workload: {a['workload']} vs {b['workload']}")
    if a["metric"] != b["metric"]:
        diffs.append(f"metric: {a['metric']} vs {b['metric']}")
    fa, fb = a.get("fixed", {}), b.get("fixed", {})
    axa, axb = a.get("axes", {}), b.get("axes", {})
    for k in sorted(set(fa) | set(fb)):
        if k == "lock":
            continue
        if k in fa and k in fb:
            if fa[k] != fb[k]:
                diffs.append(f"--{k}: {fa[k]} vs {fb[k]}")
        elif k in fa and k in axb:
            if fa[k] not in axb[k]:
                diffs.append(f"--{k}: {fa[k]} vs swept {axb[k]}")
        elif k in fb and k in axa:
            if fb[k] not in axa[k]:
                diffs.append(f"--{k}: swept {axa[k]} vs {fb[k]}")
    if diffs:
        raise UsageError(f"{pa} and {pb} are different experiments; refusing to compare:\n  "
                         + "\n  ".join(diffs))


def compare_docs(a, b, lock=None, pa="A", pb="B"):
    """[{params, lock, baseline stats, candidate stats, comparison, changelog rows}] for A vs B."""
    return compare_all(a, b, lock, pa, pb)[0]


def compare_all(a, b, lock=None, pa="A", pb="B"):
    """(rows as compare_docs, what is in one file only: {"A": {...}, "B": {...}}) where each side is
    {"cells": [params of cells the other file lacks], "locks": {lock: [labels of shared cells where
    only this file has it]}}."""
    check_comparable(a, b, pa, pb)
    hib = bool(b.get("higher_is_better", True))
    bcells = {_key(_full_params(b, c)): c for c in b["cells"]}
    acells = {_key(_full_params(a, c)): c for c in a["cells"]}
    only = {"A": {"cells": [], "locks": {}}, "B": {"cells": [], "locks": {}}}
    out = []
    for ca in a["cells"]:
        cb = bcells.get(_key(_full_params(a, ca)))
        if cb is None:
            only["A"]["cells"].append(ca["params"])
            continue
        label = tables.fmt_params(ca["params"])
        for side, mine, theirs in (("A", ca, cb), ("B", cb, ca)):
            for name in mine["stats"]:
                if name not in theirs["stats"] and (lock is None or name == lock):
                    only[side]["locks"].setdefault(name, []).append(label)
        for name in ca["stats"]:
            if lock is not None and name != lock:
                continue
            if name not in cb["stats"]:
                continue
            base, cand = ca["stats"][name]["values"], cb["stats"][name]["values"]
            comp = st.compare_samples(cand, base, hib)
            out.append({"params": ca["params"], "lock": name,
                        "baseline": st.summarize(base), "candidate": st.summarize(cand),
                        "comparison": comp,
                        "delta_pct": {lab: d for lab, _, _, d in tables.changelog_rows(cand, base)},
                        "overlap_sentence": tables.overlap_sentence(cand, base, hib)})
    for cb in b["cells"]:
        if _key(_full_params(b, cb)) not in acells:
            only["B"]["cells"].append(cb["params"])
    if not out:
        what = f"lock '{lock}'" if lock else "any lock"
        raise UsageError(f"{pa} and {pb} share no cell with {what} (A cells: "
                         f"{'; '.join(tables.fmt_params(c['params']) for c in a['cells'][:5])}; "
                         f"B cells: {'; '.join(tables.fmt_params(c['params']) for c in b['cells'][:5])})")
    return out, only


def only_lines(only, pa="A", pb="B"):
    """The cells and locks that one file has and the other lacks, in words (empty when none)."""
    lines = []
    for side, path in (("A", pa), ("B", pb)):
        o = only[side]
        bits = []
        if o["cells"]:
            bits.append(f"{len(o['cells'])} cell{'s' if len(o['cells']) != 1 else ''} ("
                        + "; ".join(tables.fmt_params(p) for p in o["cells"]) + ")")
        for name, cells in o["locks"].items():
            bits.append(f"lock {name} in {len(cells)} shared cell{'s' if len(cells) != 1 else ''} "
                        f"({'; '.join(cells)})")
        if bits:
            lines.append(f"only in {path} (not compared): " + "; ".join(bits))
    return lines


def _title(a, row):
    return f"{a['workload']} {tables.fmt_params(row['params'])} lock={row['lock']}: {a['metric']}"


def render(a, b, rows, fmt="changelog", only=None, pa="A", pb="B"):
    hib = bool(b.get("higher_is_better", True))
    only = only or {"A": {"cells": [], "locks": {}}, "B": {"cells": [], "locks": {}}}
    if fmt == "json":
        return json.dumps({"baseline_command": a.get("command"), "candidate_command": b.get("command"),
                           "workload": a["workload"], "metric": a["metric"],
                           "higher_is_better": hib, "comparisons": rows,
                           "only_in_baseline": only["A"], "only_in_candidate": only["B"]},
                          indent=1)
    if fmt == "csv":
        buf = io.StringIO()
        axes = sorted({k for r in rows for k in r["params"]})
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*axes, "lock", "stat", "baseline", "candidate", "delta_pct", "ratio",
                    "ratio_ci_lo", "ratio_ci_hi", "mannwhitney_p", "overlap", "verdict"])
        for r in rows:
            c = r["comparison"]
            for label, key in (("average", "mean"), ("median", "median"), ("min", "min"),
                               ("max", "max")):
                w.writerow([*(r["params"].get(k, "") for k in axes), r["lock"], label,
                            repr(r["baseline"][key]), repr(r["candidate"][key]),
                            "" if r["delta_pct"][label] is None else f"{r['delta_pct'][label]:.4f}",
                            c["ratio"], c["ratio_ci95"][0], c["ratio_ci95"][1],
                            c["mannwhitney_p"], c["overlap"], c["verdict"]])
        return buf.getvalue()
    parts = []
    for r in rows:
        c = r["comparison"]
        if fmt == "markdown":
            md = [f"### {_title(a, r)}", "", "| | baseline | candidate | delta |",
                  "|---|---:|---:|---:|"]
            for label, key in (("average", "mean"), ("median", "median"), ("min", "min"),
                               ("max", "max")):
                md.append(f"| {label} | {tables.fmt_num(r['baseline'][key])} | "
                          f"{tables.fmt_num(r['candidate'][key])} | "
                          f"{tables.fmt_pct(r['delta_pct'][label])} |")
            md += ["", f"Median ratio {tables.fmt_ratio(c['ratio'])} (95% CI "
                       f"{tables.fmt_ci(c['ratio_ci95'])}), Mann-Whitney p = "
                       f"{tables.fmt_p(c['mannwhitney_p'])}, n = {r['baseline']['n']} vs "
                       f"{r['candidate']['n']}: **{c['verdict']}**. {r['overlap_sentence']}", ""]
            parts.append("\n".join(md))
        else:
            parts.append(f"{_title(a, r)}\n" + tables.changelog_block(
                r["candidate"]["values"], r["baseline"]["values"], hib, comparison=c) + "\n")
    head = ""
    if fmt != "markdown":
        head = f"baseline:  {a.get('command', '?')}\ncandidate: {b.get('command', '?')}\n\n"
    tail = only_lines(only, pa, pb) if fmt in ("changelog", "markdown") else []
    if tail:
        tail = "\n" + "\n".join(f"- {t}" if fmt == "markdown" else t for t in tail) + "\n"
    return head + "\n".join(parts) + (tail or "")


def run(path_a, path_b, lock=None, fmt="changelog"):
    """Load, refuse or compare, and return the rendered text (csv: to stdout; the cells and locks
    in one file only then go to stderr, so the csv stays a table)."""
    a, b = load(path_a), load(path_b)
    rows, only = compare_all(a, b, lock, path_a, path_b)
    if fmt == "csv":
        import sys
        for line in only_lines(only, path_a, path_b):
            print(f"locklab: {line}", file=sys.stderr)
    return render(a, b, rows, fmt, only, path_a, path_b)
