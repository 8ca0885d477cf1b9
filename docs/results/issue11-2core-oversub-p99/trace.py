#!/usr/bin/env python3
"""trace.py LOCK RUN.json < perf script output - pairs each thread's sys_enter/sys_exit of futex()
(by op) and sched_yield() and prints, per kind: calls, calls over 1 ms, and the seconds spent in them
over the seconds the trace spans (the threads in such calls on average). First line: the run's
throughput, p99 and Jain fairness."""
import collections
import json
import re
import sys

lock, run = sys.argv[1], json.load(open(sys.argv[2]))["result"]
print("%s: %.0fk ops/s, p99 %.1f us, Jain %.2f" % (lock, run["ops_per_sec"] / 1e3,
                                                  run["latency"]["p99_ns"] / 1e3, run["fairness_jain"]))
OPS = {0x80: "FUTEX_WAIT", 0x81: "FUTEX_WAKE", 0x89: "FUTEX_WAIT_BITSET", 0x8a: "FUTEX_WAKE_BITSET"}
start, durs = {}, collections.defaultdict(list)
t_first = t_last = None
for line in sys.stdin:
    m = re.match(r"\s*(\d+)\s+([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)", line)
    if not m:
        continue
    tid, t, edge, call, rest = m.groups()
    t = float(t)
    t_first = t if t_first is None else t_first
    t_last = t
    if edge == "enter":
        kind = call
        if call == "futex":
            op = re.search(r"op: (0x[0-9a-f]+)", rest)
            code = int(op.group(1), 16) if op else -1
            kind = OPS.get(code, "futex op %#x" % code)
        start[tid] = (t, kind)
    elif tid in start:
        t0, kind = start.pop(tid)
        durs[kind].append(t - t0)
span = (t_last - t_first) if t_first is not None else 0
for kind in sorted(durs):
    d = durs[kind]
    total = sum(d)
    print("  %-18s %6d calls, %6d over 1 ms, %8.1f s in them = %6.1f threads on average" % (
        kind, len(d), sum(1 for x in d if x > 1e-3), total, total / span if span else 0))
