#!/usr/bin/env python3
"""wide-table JSONL [CAND] [CONTROL] - per cell of a scripts/mutex-ab --out file, CAND (default lsd)
against CONTROL (default main) and against rust_parking_lot ("pl"): ratios of the medians of ops/s,
p99 and Jain, each marked by the lab's verdict rule (+ better, - worse: ranges apart and
Mann-Whitney p < 0.05), then the count of cells behind and ahead per metric."""
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from locklab.stats import mannwhitney_p, ranges_overlap, verdict  # noqa: E402

METRICS = (("ops/s", "ops_per_sec", True), ("p99", "p99_ns", False), ("jain", "jain", True))


def main(path, cand="lsd", ctrl="main"):
    cells = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        r = json.loads(line)
        c = r["cell"]
        cells[(c["threads"], c["cs_ns"], c["parallel_ratio"])][r["variant"]].append(r["metrics"])
    tally = defaultdict(int)
    print(f"cell (threads/cs ns/ratio) | {cand}/{ctrl}: ops/s p99 jain | {cand}/pl: ops/s p99 jain")
    for key in sorted(cells):
        row = []
        for other in (ctrl, "pl"):
            for name, k, hib in METRICS:
                a = [m[k] for m in cells[key][cand]]
                b = [m[k] for m in cells[key][other]]
                if not a or not b:
                    row.append("   n/a  ")
                    continue
                ratio = statistics.median(a) / max(1e-9, statistics.median(b))
                v = verdict(ratio, mannwhitney_p(a, b), ranges_overlap(a, b), hib)
                tally[(other, name, v)] += 1
                row.append(f"{ratio:6.2f}{ {'faster': '+', 'slower': '-'}.get(v, ' ')}")
        print(f"{key[0]}/{key[1]}/{key[2]} | " + " ".join(row[:3]) + " | " + " ".join(row[3:]))
    for other in (ctrl, "pl"):
        print(f"{cand} against {other}: " + "; ".join(
            f"{name} better in {tally[(other, name, 'faster')]}, worse in {tally[(other, name, 'slower')]}"
            for name, _, _ in METRICS) + f" of {len(cells)} cells")


if __name__ == "__main__":
    main(*sys.argv[1:])
