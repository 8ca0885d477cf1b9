#!/usr/bin/env python3
"""streaks.py RUNS.jsonl - per cell and configuration (medians over the rounds): throughput, the
share of acquisitions that waited longer than 2 critical sections + 500 ns (interpolated in each
run's latency CDF, whose points lie 1 % apart below p99), p50, p99 and its range over the runs,
p99.9, max and Jain fairness."""
import collections
import json
import statistics as st
import sys


def share_above(cdf, ns):
    """1 - F(ns), linear between the CDF's points."""
    prev_ns, prev_f = 0, 0.0
    for x, f in cdf:
        if x > ns:
            if x == prev_ns:
                return 1 - f
            return 1 - (prev_f + (f - prev_f) * (ns - prev_ns) / (x - prev_ns))
        prev_ns, prev_f = x, f
    return 0.0


def runs_by_cell(path):
    """{((threads, cs-ns, parallel-ratio), the run's "cfg" tag or its lock): [result, ...]}"""
    runs = collections.defaultdict(list)
    for line in open(path):
        if line.startswith("{"):
            d = json.loads(line)
            p = d["params"]
            runs[(p["threads"], p["cs-ns"], p["parallel-ratio"]), d.get("cfg", d["lock"])].append(d["result"])
    return runs


def main(path):
    cells = collections.defaultdict(list)
    for ((_, cs, _), cfg), results in runs_by_cell(path).items():
        for r in results:
            lat = r["latency"]
            cells[(cs, cfg)].append((r["ops_per_sec"] / 1e6, share_above(lat["cdf"], 2 * cs + 500),
                                     lat["p50_ns"], lat["p99_ns"], lat["p999_ns"], lat["max_ns"],
                                     r["fairness_jain"]))
    print("| cs | configuration | runs | Mops/s | waits > 2 cs + 500 ns | p50 ns | p99 ns | p99 range | "
          "p99.9 ns | max ns | Jain |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (cs, cfg), v in sorted(cells.items()):
        m = [st.median(x[i] for x in v) for i in range(7)]
        lo, hi = min(x[3] for x in v), max(x[3] for x in v)
        print(f"| {cs} ns | {cfg} | {len(v)} | {m[0]:.2f} | {100 * m[1]:.1f} % | {m[2]:.0f} | {m[3]:.0f} | "
              f"{lo}-{hi} | {m[4]:.0f} | {m[5]:.0f} | {m[6]:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: streaks.py RUNS.jsonl")
    main(sys.argv[1])
