#!/usr/bin/env bash
# run.sh - the scheduler's view of issue 11's 2 µs / 1x column (lk_mutex's most persistent loss on
# 2 CPUs): per run, CPU utilisation ((user + system) / window), the workers' runqueue wait
# (result.runqueue_wait_threads: how many were runnable but waiting for a CPU, on average) and
# their migrations per second, for lk_mutex, rust_parking_lot and glibc_normal. Run from the
# repository root after `make build`; nothing else should run.
#
#   docs/results/issue11-2core-sched-view/run.sh [2us] [100ns] [variants]
#
# 2us: the 2 µs / 1x column at 3, 4, 8, 16, 256 threads: view.jsonl (one run record per line) and
# view.txt (medians), about 1 minute on 2 CPUs; 100ns: the 100 ns / 10x column at 4, 8, 16, 64
# threads (the other column lk_mutex trailed in two suites): view-100ns.jsonl and .txt, as long;
# variants: the 2 µs / 1x column at 4, 8, 16, 256 threads on lab variants of lk_mutex (it builds
# build-ab, -DLAB_MUTEX_VARIANTS): view-variants.jsonl and .txt, about 1 minute. Default: 2us 100ns.
# OUT_DIR=DIR writes the files there instead (another machine's record: ../issue11-2core-amd/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
drv=${DRIVER:-$repo/build/locklab-bench}
out_dir=${OUT_DIR:-$here}
[ -d "$out_dir" ] || { echo "run.sh: OUT_DIR '$out_dir' is not a directory" >&2; exit 2; }
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}

locks="lk_mutex rust_parking_lot glibc_normal"

# OUT CS_NS RATIO THREADS...: 3 interleaved rounds of 1 s per lock ($locks, on $drv) and thread count
column() {
	local out=$1 cs=$2 ratio=$3 r t lock
	shift 3
	: > "$out_dir/$out.jsonl"
	for r in 1 2 3; do
		for t in "$@"; do
			for lock in $locks; do
				"$drv" mutex --lock $lock --threads $t --cs-ns $cs --parallel-ratio $ratio \
					--duration 1 --warmup 0.1 >> "$out_dir/$out.jsonl"
			done
		done
	done
	python3 - "$out_dir/$out.jsonl" <<'PY' | tee "$out_dir/$out.txt"
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
print("threads lock                      kops/s  CPUs busy  waiting  migr/s  parks/op")
for (t, lock), v in sorted(cells.items()):
    med = [statistics.median(x[i] for x in v) for i in range(5)]
    print(f"{t:7d} {lock:24s} {med[0]:7.0f} {med[1]:10.2f} {med[2]:8.2f} {med[3]:7.0f} {med[4]:9.4f}")
PY
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(2us 100ns)
for s in "${stages[@]}"; do
	case $s in 2us|100ns|variants) ;; *) echo "run.sh: unknown stage '$s' (2us 100ns variants)" >&2; exit 2 ;; esac
done
for s in "${stages[@]}"; do
	case $s in
	2us) column view 2000 1 3 4 8 16 256 ;;
	100ns) column view-100ns 100 10 4 8 16 64 ;;
	variants)
		cmake -S "$repo" -B "$repo/build-ab" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS > /dev/null
		cmake --build "$repo/build-ab" -j "$(nproc)" --target locklab-bench > /dev/null
		drv=$repo/build-ab/locklab-bench
		locks="lk_mutex_v_base lk_mutex_v_crowdany lk_mutex_v_wm2 lk_mutex_v_nowaityield rust_parking_lot"
		column view-variants 2000 1 4 8 16 256
		locks="lk_mutex rust_parking_lot glibc_normal" drv=${DRIVER:-$repo/build/locklab-bench} ;;
	esac
done
