#!/usr/bin/env python3
"""count.py FILE.jsonl... - per cell and variant of scripts/mutex-ab's records: runs, how many of them
had p99 over 100 us, and the medians of throughput, p99 and Jain fairness."""
import collections
import json
import statistics
import sys

runs = collections.defaultdict(list)
order = []
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            c = r["cell"]
            key = ((c["threads"], c["cs_ns"], c["parallel_ratio"]), r["variant"])
            if key not in runs:
                order.append(key)
            runs[key].append(r["metrics"])
print("%-16s %-18s %4s %13s %10s %12s %6s" % ("cell", "variant", "runs", "p99 > 100 us", "ops/s", "p99 (us)", "Jain"))
rank = {v: i for i, v in enumerate(["base", "h5ms", "h20ms", "h10s", "noyield", "nowaityield", "noyields",
                                     "yl100", "yl1m", "wyc16", "wms8", "wms8f"])}
order.sort(key=lambda k: (k[0], rank.get(k[1], len(rank)), k[1]))
for key in order:
    m = runs[key]
    med = lambda k: statistics.median(x[k] for x in m)
    print("%-16s %-18s %4d %13d %9.0fk %12.1f %6.2f" % (
        "%d/%d/%d" % key[0], key[1], len(m), sum(1 for x in m if x["p99_ns"] > 1e5),
        med("ops_per_sec") / 1e3, med("p99_ns") / 1e3, med("jain")))
