#!/usr/bin/env python3
"""threadp99.py - the worst thread's own p99 (result.latency.thread_p99_max_ns) per thread count
and lock, beside threads x handoff_ns, the merged p99, Jain, the threads timed, and throughput and
CPU per op over a subject lock's: lk_mutex's (q + 1) x handoff_ns read beside the peers.

    threadp99.py issue11-mutex.json                       # a suite or bench results file
    threadp99.py --subject lk handoff.jsonl               # scripts/mutex-ab --out (variants as locks)
    threadp99.py --cells yield-h500.jsonl                 # per cell: every run's ops/s

Files: results files, *.jsonl of driver run records, or scripts/mutex-ab --out files (their variant
names stand for the locks), read by locklab.results.run_records as scripts/ab-table reads them.
Per thread count and lock: the median over the cells of each cell's median over its runs, and for
the worst thread's p99 the range of those cell medians. Exit 2 with one line on input it cannot
read.
"""
import argparse
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from locklab.errors import FileError  # noqa: E402
from locklab.results import run_records  # noqa: E402

med = statistics.median


def fmt(ms):
    """A duration in ms as "840 us" below 1 ms, "24.9 ms" from there (3 significant digits)."""
    return f"{ms * 1000:.3g} us" if ms < 1 else f"{ms:.3g} ms"


def cells_of(files):
    """{(threads, cell key): {lock: [results]}} over the successful mutex runs of the files."""
    cells = defaultdict(lambda: defaultdict(list))
    for f in files:
        for r in run_records(f, validate=False):
            if isinstance(r.get("record"), dict) and "variant" in r:
                r = dict(r["record"], lock=r["variant"])  # a scripts/mutex-ab line
            res = r.get("result") or {}
            if "ops_per_sec" not in res or not isinstance(r.get("params"), dict):
                continue
            p = r["params"]
            key = tuple(sorted((k, str(v)) for k, v in p.items() if k != "lock"))
            cells[(p.get("threads"), key)][r["lock"]].append(res)
    return cells


def lat(r, k):
    v = (r.get("latency") or {}).get(k)
    return v if isinstance(v, (int, float)) else None


def table(title, locks, threads, cell_fn, first=None):
    print(f"\n{title}\n")
    print("| threads | " + (f"{first[0]} | " if first else "") + " | ".join(locks) + " |")
    print("|---:|" + ("---:|" if first else "") + "---|" * len(locks))
    for t in threads:
        print(f"| {t} | " + (f"{first[1](t)} | " if first else "") +
              " | ".join(cell_fn(t, lk) for lk in locks) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--subject", default="lk_mutex", help="the lock the ratios are taken over")
    ap.add_argument("--handoff-ns", type=int, default=1000000,
                    help="the subject's handoff_ns in the runs (the default policy: 1 ms)")
    ap.add_argument("--cells", action="store_true", help="one line per cell: every run's ops/s")
    a = ap.parse_args()
    try:
        cells = cells_of(a.files)
    except FileError as e:
        print(f"threadp99.py: {e}", file=sys.stderr)
        sys.exit(2)
    if not cells:
        print("threadp99.py: no successful mutex run in the files given", file=sys.stderr)
        sys.exit(2)
    locks = sorted({lk for by in cells.values() for lk in by})
    if a.cells:
        # name a cell by the parameters that differ between the cells
        vary = {k for k in {k for _, key in cells for k, _ in key}
                if len({dict(key).get(k) for _, key in cells}) > 1}
        for (_, key), by in sorted(cells.items(), key=lambda kv: kv[0][1]):
            print(", ".join(f"{k}={v}" for k, v in key if k in vary) + ": " + "; ".join(
                f"{lk} {med(r['ops_per_sec'] for r in rs) / 1e6:.3f}M [" +
                ", ".join(f"{r['ops_per_sec'] / 1e6:.2f}" for r in rs) + "]"
                for lk, rs in sorted(by.items())))
        return

    def per_cell(t, lk, get):
        """The lock's per-cell medians of get(result) at t threads, over the runs that report it (a
        run with no timed acquisition has no latency figures)."""
        out = []
        for (tt, _), by in cells.items():
            vals = [v for r in by.get(lk, []) if (v := get(r)) is not None] if tt == t else []
            if vals:
                out.append(med(vals))
        return out

    threads = sorted({t for t, _ in cells}, key=lambda t: (t is None, t))

    def worst(t, lk):
        v = per_cell(t, lk, lambda r: lat(r, "thread_p99_max_ns"))
        return f"{fmt(med(v) / 1e6)} ({fmt(min(v) / 1e6)} - {fmt(max(v) / 1e6)})" if v else "-"

    def merged(t, lk):
        v = per_cell(t, lk, lambda r: lat(r, "p99_ns"))
        return fmt(med(v) / 1e6) if v else "-"

    def fair(t, lk):
        j = [r["fairness_jain"] for (tt, _), by in cells.items() if tt == t
             for r in by.get(lk, []) if isinstance(r.get("fairness_jain"), (int, float))]
        s = [lat(r, "threads_sampled") for (tt, _), by in cells.items() if tt == t
             for r in by.get(lk, []) if lat(r, "threads_sampled") is not None]
        return f"{med(j):.2f}" if j else "-", f"{med(s):.0f}" if s else "-"

    def over_subject(t, lk):
        ops, cpu = [], []
        for (tt, _), by in cells.items():
            x, y = by.get(lk), by.get(a.subject)
            if tt != t or not x or not y:
                continue
            ops.append(med(r["ops_per_sec"] for r in x) / med(r["ops_per_sec"] for r in y))
            cx = [r["cpu_ns_per_op"] for r in x if isinstance(r.get("cpu_ns_per_op"), (int, float))]
            cy = [r["cpu_ns_per_op"] for r in y if isinstance(r.get("cpu_ns_per_op"), (int, float))]
            if cx and cy:
                cpu.append(med(cx) / med(cy))
        return ((f"ops {med(ops):.2f}x [{min(ops):.2f}-{max(ops):.2f}]" if ops else "-") +
                (f"; CPU/op {med(cpu):.2f}x [{min(cpu):.2f}-{max(cpu):.2f}]" if cpu else ""))

    table("Worst thread's p99: the median over the cells (the range of the cell medians)", locks,
          threads, worst, first=("threads x handoff_ns", lambda t: fmt(t * a.handoff_ns / 1e6)))
    table("Merged p99: the median over the cells", locks, threads, merged)
    table("Jain index / threads timed (threads_sampled): medians over the runs", locks, threads,
          lambda t, lk: " / ".join(fair(t, lk)))
    if a.subject in locks:
        table(f"Throughput and CPU per op over {a.subject}'s, per cell (medians over the runs): the "
              "median over the cells [lowest-highest]", [lk for lk in locks if lk != a.subject],
              threads, over_subject)
    print(f"\n{sum(len(by) for by in cells.values())} (cell, lock) pairs over {len(cells)} cells.")


if __name__ == "__main__":
    main()
