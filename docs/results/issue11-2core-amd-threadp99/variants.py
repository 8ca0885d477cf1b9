#!/usr/bin/env python3
"""variants.py - medians per thread count and variant of scripts/mutex-ab --out files (and of
yield-h500.jsonl, tagged the same way): the worst thread's own p99, the merged p99 and ops/s.

    variants.py handoff.jsonl            # lk at handoff_ns 1 ms, 500 us, 250 us; rust_parking_lot
    variants.py --cells yield-h500.jsonl # per cell instead of per thread count (threads, groups)

Per thread count: the median over its cells of each cell's median over its runs, and for the
worst thread's p99 the range of those cell medians. Exit 2 with one line on a file it cannot read.
"""
import argparse
import json
import statistics as st
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--cells", action="store_true", help="one row per cell, with every run's ops/s")
    a = ap.parse_args()
    cells = defaultdict(lambda: defaultdict(list))
    try:
        with open(a.file) as f:
            for n, line in enumerate(f, 1):
                r = json.loads(line)
                rec = r["record"]
                res = rec.get("result") or {}
                if "ops_per_sec" not in res:
                    continue
                p = rec["params"]
                key = (p["threads"], p.get("groups", 1), p.get("cs-ns"), p.get("parallel-ratio"))
                cells[key][r["variant"]].append(res)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"variants.py: {a.file}: not a file of mutex-ab run lines ({e})", file=sys.stderr)
        sys.exit(2)
    if not cells:
        print(f"variants.py: {a.file}: no successful mutex run", file=sys.stderr)
        sys.exit(2)
    variants = sorted({v for c in cells.values() for v in c})
    if a.cells:
        for key in sorted(cells):
            parts = []
            for v in variants:
                ops = [r["ops_per_sec"] / 1e6 for r in cells[key].get(v, [])]
                if ops:
                    parts.append(f"{v} {st.median(ops):.3f}M [" + ", ".join(f"{x:.2f}" for x in ops) + "]")
            print(f"threads={key[0]} groups={key[1]}: " + "; ".join(parts))
        return
    print("| threads | variant | worst thread's p99, ms (range over cells) | merged p99, us | Mops/s |")
    print("|---:|---|---|---:|---:|")
    for t in sorted({k[0] for k in cells}):
        for v in variants:
            ks = [k for k in cells if k[0] == t and cells[k].get(v)]
            tp = [st.median(r["latency"]["thread_p99_max_ns"] for r in cells[k][v]) / 1e6 for k in ks
                  if all("thread_p99_max_ns" in r["latency"] for r in cells[k][v])]
            p99 = [st.median(r["latency"]["p99_ns"] for r in cells[k][v]) / 1e3 for k in ks]
            ops = [st.median(r["ops_per_sec"] for r in cells[k][v]) / 1e6 for k in ks]
            tps = f"{st.median(tp):.3g} ({min(tp):.2g}-{max(tp):.3g})" if tp else "-"
            print(f"| {t} | {v} | {tps} | {st.median(p99):.3g} | {st.median(ops):.3g} |")


if __name__ == "__main__":
    main()
