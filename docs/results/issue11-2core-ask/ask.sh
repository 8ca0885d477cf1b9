#!/usr/bin/env bash
# ask.sh - lk_mutex with the spinner's ask on (LOCKLAB_MUTEX_ASK=1: lk_mutex_set_ask(1), stop 33)
# against the default (off, the design before it), one driver, interleaved by scripts/mutex-ab,
# 5 repeats:
#   wide.jsonl    the whole wide matrix (threads 1-256, critical sections 1, 100 and 2000 ns,
#                 outside work 0-100x)
#   batch.jsonl   the fixed-work batch (100k critical sections over the threads)
#   pinned.jsonl  issue11-pinned's cells, the whole run on one CPU (taskset -c FIRST)
#   yield.jsonl   issue11-yield's cells (the holder yields inside the lock; 2 s windows), which
#                 mutex-ab does not drive: both in turn, 5 rounds, tagged with "variant" as its lines
# and mutex-ab's tables next to them (*.txt). Read them with
#   scripts/ab-table --thread-p99 --control off --candidates ask wide.jsonl
# Build the driver first (make build). About 12 minutes on the 2-vCPU guest. Run it alone. STAGES (default "wide batch pinned yield")
# picks some.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "ask.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
v=(--variant "ask=$D:lk_mutex:LOCKLAB_MUTEX_ASK=1" --variant "off=$D:lk_mutex")
stages=${STAGES:-wide batch pinned yield}
for s in $stages; do
	case $s in
	wide)
		"$root/scripts/mutex-ab" "${v[@]}" --threads 1,2,3,4,8,16,32,64,256 --cs-ns 1,100,2000 \
			--parallel-ratio 0,1,10,100 --repeat 5 --out "$here/wide.jsonl" > "$here/wide.txt" ;;
	batch)
		"$root/scripts/mutex-ab" "${v[@]}" --workload mutex-batch --threads 1,2,3,4,8,16,32,64,256 \
			--cs-ns 1,100,2000 --total-ops 100000 --repeat 5 --out "$here/batch.jsonl" > "$here/batch.txt" ;;
	pinned)
		cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
		taskset -c "$cpu" "$root/scripts/mutex-ab" "${v[@]}" --threads 2,4,8,32 --cs-ns 1,100 \
			--parallel-ratio 0,1 --repeat 5 --out "$here/pinned.jsonl" > "$here/pinned.txt" ;;
	yield)
		: > "$here/yield.jsonl"
		for _ in 1 2 3 4 5; do
			for t in 2 4 8; do
				for g in 1 2; do
					for name in ask off; do
						a=1; [ $name = ask ] || a=0
						LOCKLAB_MUTEX_ASK=$a "$D" mutex --lock lk_mutex --threads $t --groups $g \
							--cs-yield 1 --cs-ns 1 --duration 2 --warmup 0.1 |
							sed "s/^/{\"variant\":\"$name\",\"record\":/; s/\$/}/" >> "$here/yield.jsonl"
					done
				done
			done
		done ;;
	*) echo "ask.sh: unknown stage '$s' (wide, batch, pinned, yield)" >&2; exit 2 ;;
	esac
done
