#!/usr/bin/env python3
"""threadp99.py - the worst thread's own p99 (result.latency.thread_p99_max_ns) of a locklab suite
or bench results file, per thread count: lk_mutex's against threads x handoff_ns, and every lock's
median, so the (q + 1) x handoff_ns bound of lk_mutex's owed waiters can be read beside the peers.

    threadp99.py issue11-mutex.json [--handoff-ns 1000000]

Per thread count and lock: the median over the cells (each cell: the median over its runs) and the
range of those cell medians, and the lock's median Jain index and threads timed. Exit 2 with
one line on a file it cannot read.
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict


def fmt(ms):
    """A duration in ms as "840 us" below 1 ms, "24.9 ms" from there (3 significant digits)."""
    return f"{ms * 1000:.3g} us" if ms < 1 else f"{ms:.3g} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--handoff-ns", type=int, default=1000000,
                    help="lk_mutex's handoff_ns in the runs (the default policy: 1 ms)")
    a = ap.parse_args()
    try:
        with open(a.file) as f:
            doc = json.load(f)
        runs = doc["runs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"threadp99.py: {a.file}: not a readable results file ({e})", file=sys.stderr)
        sys.exit(2)
    cell = defaultdict(lambda: defaultdict(list))  # (threads, cell key) -> lock -> results
    for r in runs:
        res = r.get("result") or {}
        if not isinstance((res.get("latency") or {}).get("thread_p99_max_ns"), (int, float)):
            continue
        p = r["params"]
        key = tuple(sorted((k, v) for k, v in p.items() if k != "lock"))
        cell[(p.get("threads"), key)][r["lock"]].append(res)
    per = defaultdict(lambda: defaultdict(lambda: {"tp": [], "jain": [], "timed": []}))
    for (t, _), by_lock in cell.items():
        for lock, rs in by_lock.items():
            d = per[t][lock]
            d["tp"].append(statistics.median(r["latency"]["thread_p99_max_ns"] for r in rs) / 1e6)
            d["jain"] += [r["fairness_jain"] for r in rs if isinstance(r.get("fairness_jain"), (int, float))]
            d["timed"] += [r["latency"]["threads_sampled"] for r in rs
                           if isinstance(r["latency"].get("threads_sampled"), int)]
    if not per:
        print(f"threadp99.py: {a.file}: no run reports latency.thread_p99_max_ns", file=sys.stderr)
        sys.exit(2)
    locks = sorted({lk for t in per for lk in per[t]})
    print("Worst thread's p99: the median over the cells (the range of the cell medians)\n")
    print("| threads | threads x handoff_ns | " + " | ".join(locks) + " |")
    print("|---:|---:|" + "---|" * len(locks))
    for t in sorted(per):
        row = [str(t), fmt(t * a.handoff_ns / 1e6)]
        for lk in locks:
            tp = per[t].get(lk, {}).get("tp")
            row.append(f"{fmt(statistics.median(tp))} ({fmt(min(tp))} - {fmt(max(tp))})" if tp else "-")
        print("| " + " | ".join(row) + " |")
    print("\nJain index / threads timed (threads_sampled): medians over the runs\n")
    print("| threads | " + " | ".join(locks) + " |")
    print("|---:|" + "---|" * len(locks))
    for t in sorted(per):
        row = [str(t)]
        for lk in locks:
            d = per[t].get(lk)
            jain = f"{statistics.median(d['jain']):.2f}" if d and d["jain"] else "-"
            timed = f"{statistics.median(d['timed']):.0f}" if d and d["timed"] else "-"
            row.append(f"{jain} / {timed}")
        print("| " + " | ".join(row) + " |")
    if "lk_mutex" in locks:
        print("\nThroughput and CPU per op over lk_mutex's, per cell (medians over the runs): the "
              "median over the cells [lowest-highest]\n")
        print("| threads | " + " | ".join(lk for lk in locks if lk != "lk_mutex") + " |")
        print("|---:|" + "---|" * (len(locks) - 1))
        for t in sorted(per):
            row = [str(t)]
            for lk in locks:
                if lk == "lk_mutex":
                    continue
                ops, cpu = [], []
                for (tt, _), by_lock in cell.items():
                    a, b = by_lock.get(lk), by_lock.get("lk_mutex")
                    if tt != t or not a or not b:
                        continue
                    ops.append(statistics.median(r["ops_per_sec"] for r in a) /
                               statistics.median(r["ops_per_sec"] for r in b))
                    ca = [r["cpu_ns_per_op"] for r in a if isinstance(r.get("cpu_ns_per_op"), (int, float))]
                    cb = [r["cpu_ns_per_op"] for r in b if isinstance(r.get("cpu_ns_per_op"), (int, float))]
                    if ca and cb:
                        cpu.append(statistics.median(ca) / statistics.median(cb))
                row.append((f"ops {statistics.median(ops):.2f}x [{min(ops):.2f}-{max(ops):.2f}]" if ops else "-") +
                           (f"; CPU/op {statistics.median(cpu):.2f}x [{min(cpu):.2f}-{max(cpu):.2f}]" if cpu else ""))
            print("| " + " | ".join(row) + " |")
    print(f"\n{sum(len(v) for v in cell.values())} (cell, lock) pairs over "
          f"{len(cell)} cells.")

if __name__ == "__main__":
    main()
