#!/usr/bin/env bash
# wide-h500.sh - lk_mutex with handoff_ns 1 ms (the default) against 500 us
# (LOCKLAB_MUTEX_HANDOFF_NS=500000) on the whole wide matrix (threads 1-256, critical sections 1,
# 100 and 2000 ns, outside work 0-100x), 5 repeats interleaved by scripts/mutex-ab, then the
# fixed-work batch and issue11-yield's cells. Writes wide-h500.jsonl, batch-h500.jsonl and
# yield-h500.jsonl next to this script (and mutex-ab's own tables, *.txt); read them with
#   scripts/ab-table --thread-p99 --control lk --candidates lk_h500us wide-h500.jsonl
# About 16 minutes on the 2-vCPU guest. Run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "wide-h500.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
v=(--variant "lk=$D:lk_mutex" --variant "lk_h500us=$D:lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=500000")
"$root/scripts/mutex-ab" "${v[@]}" --threads 1,2,3,4,8,16,32,64,256 --cs-ns 1,100,2000 \
	--parallel-ratio 0,1,10,100 --repeat 5 --out "$here/wide-h500.jsonl" > "$here/wide-h500.txt"
"$root/scripts/mutex-ab" "${v[@]}" --workload mutex-batch --threads 1,2,3,4,8,16,32,64,256 \
	--cs-ns 1,100,2000 --total-ops 100000 --repeat 5 --out "$here/batch-h500.jsonl" > "$here/batch-h500.txt"
# issue11-yield's cells (the holder yields inside the lock; 2 s windows), which mutex-ab does not
# drive: both policies in turn, 5 rounds, JSON lines tagged with "variant" as mutex-ab's are.
: > "$here/yield-h500.jsonl"
for _ in 1 2 3 4 5; do
	for t in 2 4 8; do
		for g in 1 2; do
			for h in 1000000 500000; do
				name=lk; [ $h = 1000000 ] || name=lk_h500us
				LOCKLAB_MUTEX_HANDOFF_NS=$h "$D" mutex --lock lk_mutex --threads $t --groups $g \
					--cs-yield 1 --cs-ns 1 --duration 2 --warmup 0.1 |
					sed "s/^/{\"variant\":\"$name\",\"record\":/; s/\$/}/" >> "$here/yield-h500.jsonl"
			done
		done
	done
done
