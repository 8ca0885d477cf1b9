#!/usr/bin/env python3
"""oversub.py RUNS.jsonl - per cell and lock (or the run's "cfg" tag, where present) of a file of
locklab-run lines: median throughput, every run's p99 (sorted), median p99.9 and median Jain
fairness."""
import statistics as st
import sys

from streaks import runs_by_cell


def main(path):
    runs = runs_by_cell(path)
    print("| threads / cs ns / outside | lock | Mops/s | p99 of each run, µs | p99.9 ms | Jain |")
    print("|---|---|---:|---|---:|---:|")
    for (cell, lock), v in sorted(runs.items()):
        p99 = sorted(x["latency"]["p99_ns"] for x in v)
        print(f"| {cell[0]} / {cell[1]} / {cell[2]}x | {lock} | {st.median(x['ops_per_sec'] for x in v) / 1e6:.3f} | "
              + ", ".join(f"{n / 1000:.1f}" for n in p99)
              + f" | {st.median(x['latency']['p999_ns'] for x in v) / 1e6:.1f} | "
              f"{st.median(x['fairness_jain'] for x in v):.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: oversub.py RUNS.jsonl")
    main(sys.argv[1])
