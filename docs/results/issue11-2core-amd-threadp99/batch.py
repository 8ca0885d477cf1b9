#!/usr/bin/env python3
"""batch.py - batch-h500.jsonl (scripts/mutex-ab --workload mutex-batch --out): per cell, lk_h500us
against lk on the time to finish, the slowest thread and p99, each ratio marked with the lab's
verdict rule (+ better, - worse: ranges apart and Mann-Whitney p < 0.05).

    batch.py batch-h500.jsonl
"""
import json
import os
import statistics as st
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from locklab.stats import compare_samples  # noqa: E402

METRICS = (("finish_s", lambda r: r["finish_s"]), ("slowest_thread_s", lambda r: r["slowest_thread_s"]),
           ("p99_ns", lambda r: r["latency"]["p99_ns"]))


def main():
    if len(sys.argv) != 2:
        print("usage: batch.py FILE", file=sys.stderr)
        sys.exit(2)
    cells = defaultdict(lambda: defaultdict(list))
    try:
        with open(sys.argv[1]) as f:
            for line in f:
                r = json.loads(line)
                res = r["record"].get("result") or {}
                if "finish_s" in res:
                    p = r["record"]["params"]
                    cells[(p["threads"], p["cs-ns"])][r["variant"]].append(res)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"batch.py: {sys.argv[1]}: not a file of mutex-ab batch lines ({e})", file=sys.stderr)
        sys.exit(2)
    marks = {m: {"+": 0, "-": 0} for m, _ in METRICS}
    print("| threads | cs ns | " + " | ".join(f"{m}: lk_h500us / lk" for m, _ in METRICS) + " |")
    print("|---:|---:|" + "---:|" * len(METRICS))
    for key in sorted(cells):
        a, b = cells[key].get("lk_h500us"), cells[key].get("lk")
        if not a or not b:
            continue
        row = []
        for m, get in METRICS:
            c = compare_samples([get(r) for r in a], [get(r) for r in b], higher_is_better=False)
            mk = {"faster": "+", "slower": "-"}.get(c["verdict"], "")
            if mk:
                marks[m][mk] += 1
            row.append("n/a" if c["ratio"] is None else f"{c['ratio']:.2f}{mk}")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(row) + " |")
    print("\n" + "; ".join(f"{m}: {v['+']} better, {v['-']} worse" for m, v in marks.items()))


if __name__ == "__main__":
    main()
