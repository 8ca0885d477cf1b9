#!/usr/bin/env bash
# run.sh - the scheduler's view of issue 11's 2 µs / 1x column (lk_mutex's most persistent loss on
# 2 CPUs): per run, CPU utilisation ((user + system) / window), the workers' runqueue wait
# (result.runqueue_wait_threads: how many were runnable but waiting for a CPU, on average) and
# their migrations per second, for lk_mutex, rust_parking_lot and glibc_normal. Run from the
# repository root after `make build`; nothing else should run. Writes view.jsonl (one run record
# per line) and view.txt (medians) here; about 1 minute on 2 CPUs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
drv=${DRIVER:-$repo/build/locklab-bench}
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
: > "$here/view.jsonl"
for r in 1 2 3; do
	for t in 3 4 8 16 256; do
		for lock in lk_mutex rust_parking_lot glibc_normal; do
			"$drv" mutex --lock $lock --threads $t --cs-ns 2000 --parallel-ratio 1 --duration 1 \
				--warmup 0.1 >> "$here/view.jsonl"
		done
	done
done
python3 - "$here/view.jsonl" <<'PY' | tee "$here/view.txt"
import json, statistics, sys
from collections import defaultdict
cells = defaultdict(list)
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d["result"]
    cells[(d["params"]["threads"], d["lock"])].append(
        (r["ops_per_sec"] / 1e3, (r["cpu_user_s"] + r["cpu_sys_s"]) / r["elapsed_s"],
         r["runqueue_wait_threads"], r["migrations_per_s"], r["nvcsw"] / r["total_ops"]))
print(f"# {d['machine'].get('cpu_model', '?')}, {d['driver'].get('commit', '?')}; medians of 3 runs of 1 s")
print("threads lock              kops/s  CPUs busy  waiting  migr/s  parks/op")
for (t, lock), v in sorted(cells.items()):
    med = [statistics.median(x[i] for x in v) for i in range(5)]
    print(f"{t:7d} {lock:16s} {med[0]:7.0f} {med[1]:10.2f} {med[2]:8.2f} {med[3]:7.0f} {med[4]:9.4f}")
PY
