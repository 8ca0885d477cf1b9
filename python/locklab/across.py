"""Where a subject lock stands in the same cells across several results files.

One `locklab suite` run judges each cell once: the subject is first, tied or behind by the verdict
rule (ranges apart and Mann-Whitney p < 0.05). Between two quiet runs of issue 11's matrix on the
same VM five hours apart, the subject's throughput losses went from 1 to 15 cells
(docs/results/issue11-2core-stale-spinner/), so a loss seen in one run is a lead, and a loss seen in
every run is a finding. This module lines the runs up: per cell and judged metric, the subject's
standing in each file (suite.standing(), the summary's own rule), and which cells it is behind in
every file, in some, or in none.

Files are matched by their cells' parameters; cells missing from any file are counted and left out.
Files whose fixed parameters differ (window, repeats, ...) are compared anyway, and the difference
is printed.
"""

from . import stats as st
from . import suite
from .errors import UsageError


def _key(params):
    return tuple(sorted(params.items()))


def _head(doc):
    lk = doc.get("locklab") or {}
    m = doc.get("machine") or {}
    return (f"{doc.get('created', '?')}, locklab {lk.get('commit', '?')}, "
            f"{m.get('cpu_model', '?')} x {m.get('online_cpus', '?')} CPUs, {len(doc.get('runs', []))} runs")


def check(docs, names, subject):
    """UsageError naming the file when the files cannot be lined up."""
    if len(docs) < 2:
        raise UsageError("expected at least two results files to line up, got "
                         f"{len(docs)}")
    wl = docs[0].get("workload")
    if wl not in suite.JUDGED:
        raise UsageError(f"{names[0]}: workload '{wl}' has no judged metrics "
                         f"(expected one of {', '.join(suite.JUDGED)})")
    for d, n in zip(docs, names):
        if d.get("workload") != wl:
            raise UsageError(f"{n}: workload '{d.get('workload')}', but {names[0]}'s is '{wl}'")
        if subject not in d.get("locks", []):
            raise UsageError(f"{n}: --subject '{subject}' is not among its locks "
                             f"({', '.join(d.get('locks', []))})")


def standings(docs, subject, metrics=None):
    """[(cell params, metric, [standing per doc])] over the cells every doc has, in the first doc's
    order, and the number of cells left out because some doc lacks them."""
    metrics = metrics or suite.JUDGED[docs[0]["workload"]]
    cells = [{_key(c["params"]): c for c in d["cells"]} for d in docs]
    common = [k for k in cells[0] if all(k in c for c in cells[1:])]
    missing = len(set().union(*cells)) - len(common)
    rows = []
    for k in common:
        by_doc = [suite.cell_results(d, c[k]) for d, c in zip(docs, cells)]
        for m in metrics:
            rows.append((cells[0][k]["params"], m, [suite.standing(b, m, subject) for b in by_doc]))
    return rows, missing


# A median this much worse than the winner's (ratio below it, or above its inverse where lower is
# better) in every file is a lead the verdict rule may not call in any one noisy run.
WORSE = 0.90


def _worse(sd, metric):
    """The subject's median is at least 10% worse than the winner's (never when it is first)."""
    if sd is None or sd["place"] == "first" or sd["ratio"] is None:
        return False
    return sd["ratio"] < WORSE if st.higher_is_better(metric) else sd["ratio"] > 1 / WORSE


def fixed_differences(docs, names):
    """Lines naming each fixed parameter whose value differs between the files."""
    keys = sorted(set().union(*((d.get("fixed") or {}).keys() for d in docs)))
    out = []
    for k in keys:
        vals = [(d.get("fixed") or {}).get(k) for d in docs]
        if len(set(map(repr, vals))) > 1:
            out.append(f"- fixed parameter `{k}` differs: " +
                       ", ".join(f"{n} {v!r}" for n, v in zip(names, vals)))
    return out


def shared_orders(docs, names):
    """Lines naming each group of files that ran their locks in the same order: the lock-order
    shuffle with one seed (or none), the same locks, cells and repeats. Their runs of one lock in one
    cell then came at the same place in every file - after the same runs, as far into the bench -
    so what the place does (a machine whose speed follows what ran before) recurs in each of them,
    and a loss found in all of them is less independent than it looks."""
    groups = {}
    for n, d in zip(names, docs):
        order = d.get("order") or {}
        if "seed" not in order and "shuffle" not in order:
            continue  # a file from before the order was recorded
        key = (repr(order.get("shuffle")), repr(order.get("seed") if order.get("shuffle") else None),
               repr(d.get("locks")), repr([c.get("params") for c in d.get("cells", [])]),
               repr(len(d.get("runs", []))))
        groups.setdefault(key, []).append((n, order))
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        how = (f"shuffled with seed {members[0][1].get('seed')}" if members[0][1].get("shuffle")
               else "not shuffled")
        out.append(f"- {', '.join(n for n, _ in members)} ran their locks in the same order "
                   f"({how}): a loss recurring in them may follow its place in that order (what "
                   "ran before it, how far into the bench) as well as the lock; records made with "
                   "different seeds (`locklab suite` draws one per run) are independent in that")
    return out


def across_md(docs, names, subject, all_metrics=False):
    """Markdown lines: the files, then per metric how many cells the subject is behind in every
    file, in some and in none (and how many have its median 10% worse in every file), then every
    cell it is behind in at least once or whose median is 10% worse in every file."""
    check(docs, names, subject)
    metrics = [m for m in suite.JUDGED[docs[0]["workload"]] if all_metrics or m in suite.TARGETED]
    rows, missing = standings(docs, subject, metrics)
    labels = [f"F{i + 1}" for i in range(len(docs))]
    lines = [f"## {subject} across {len(docs)} results files ({docs[0]['workload']})", ""]
    lines += [f"- {lb}: `{n}` ({_head(d)})" for lb, n, d in zip(labels, names, docs)]
    lines += fixed_differences(docs, labels)
    lines += shared_orders(docs, labels)
    ncells = len({_key(p) for p, _, _ in rows})
    lines += ["", f"{ncells} cells in every file" +
              (f"; {missing} cells left out (not in every file)." if missing else "."), "",
              "Behind means the verdict rule of `locklab suite` in that file (ranges apart and "
              "Mann-Whitney p < 0.05); the ratio is median(subject) / median(winner) with its "
              "95% CI.", "",
              f"A median at least {100 - WORSE * 100:.0f}% worse than the winner's in every "
              "file, whatever the verdicts, is counted too: a lead that no single noisy run "
              "may call.", "",
              "| metric | behind in every file | in some | in none | not judged | "
              f"median {100 - WORSE * 100:.0f}% worse in every file |",
              "|---|---:|---:|---:|---:|---:|"]
    for m in metrics:
        mine = [sds for _, mm, sds in rows if mm == m]
        judged = [sds for sds in mine if all(sd is not None for sd in sds)]
        nb = [sum(sd["place"] == "behind" for sd in sds) for sds in judged]
        lines.append(f"| {suite.LABEL.get(m, m)} | {sum(b == len(docs) for b in nb)} | "
                     f"{sum(0 < b < len(docs) for b in nb)} | {sum(b == 0 for b in nb)} | "
                     f"{len(mine) - len(judged)} | "
                     f"{sum(all(_worse(sd, m) for sd in sds) for sds in judged)} |")

    def nbehind(sds):
        return sum(sd is not None and sd["place"] == "behind" for sd in sds)

    listed = [(p, m, sds) for p, m, sds in rows
              if nbehind(sds) or all(_worse(sd, m) for sd in sds)]
    # cells behind in the most files first, then in the first file's order
    listed.sort(key=lambda r: -nbehind(r[2]))
    if listed:
        lines += ["", f"### Cells where {subject} is behind in at least one file, or its median "
                  f"{100 - WORSE * 100:.0f}% worse in every one", "",
                  "| cell | metric | behind in | median worse in every file | "
                  + " | ".join(labels) + " |",
                  "|---|---|---:|---|" + "---|" * len(labels)]
        for p, m, sds in listed:
            lines.append(f"| {suite._cell_label(p)} | {suite.LABEL.get(m, m)} | "
                         f"{nbehind(sds)} of {len(sds)} | "
                         f"{'yes' if all(_worse(sd, m) for sd in sds) else 'no'} | "
                         + " | ".join(suite._entry(sd) for sd in sds) + " |")
    else:
        lines += ["", f"{subject} is behind in no cell of any file, and no median is "
                  f"{100 - WORSE * 100:.0f}% worse in every file."]
    return lines + [""]
