#!/usr/bin/env bash
# handoff.sh - lk_mutex at handoff_ns 1 ms (the default), 500 us and 250 us
# (LOCKLAB_MUTEX_HANDOFF_NS) beside rust_parking_lot, in the wide matrix's cells with more threads
# than this machine's 2 CPUs, interleaved by scripts/mutex-ab (every variant once per cell and
# repeat, in shuffled order). Writes handoff.jsonl next to this script; read it with
#   scripts/ab-table --thread-p99 --control lk --candidates lk_h500us,lk_h250us,rust_parking_lot handoff.jsonl
# About 6 minutes on the 2-vCPU guest. Run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "handoff.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
"$root/scripts/mutex-ab" \
	--variant "lk=$D:lk_mutex" \
	--variant "lk_h500us=$D:lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=500000" \
	--variant "lk_h250us=$D:lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=250000" \
	--variant "rust_parking_lot=$D:rust_parking_lot" \
	--threads 8,16,32,64,256 --cs-ns 100,2000 --parallel-ratio 0,1,10,100 \
	--repeat 5 --out "$here/handoff.jsonl"
