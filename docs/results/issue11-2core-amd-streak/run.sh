#!/usr/bin/env bash
# run.sh - 2 threads, nothing outside the lock (100 ns and 2 us inside): lk_mutex under several
# handoff_ns and spin_max_ns (LOCKLAB_MUTEX_* environment, lab/adapters/lk_mutex.c) beside
# absl_mutex, rust_parking_lot and glibc_normal, interleaved in ROUNDS rounds (default 8) of
# 0.3 s runs. JSON lines on stdout, each run tagged with "cfg". Read them with streaks.py.
#   docs/results/issue11-2core-amd-streak/run.sh > runs.jsonl
set -euo pipefail
D=${LOCKLAB_BENCH:-build/locklab-bench}
[ -x "$D" ] || { echo "run.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
run() {	# cfg, then the driver's arguments
	local cfg=$1; shift
	"$D" mutex --threads 2 --parallel-ratio 0 --duration 0.3 --warmup 0.05 "$@" |
		sed "s/^{/{\"cfg\":\"$cfg\",/"
}
for _ in $(seq "${ROUNDS:-8}"); do
	for c in 100 2000; do
		run lk_default --lock lk_mutex --cs-ns $c
		for h in 200000 50000 20000; do
			LOCKLAB_MUTEX_HANDOFF_NS=$h run lk_handoff$((h / 1000))us --lock lk_mutex --cs-ns $c
		done
		LOCKLAB_MUTEX_SPIN_MAX_NS=2000 LOCKLAB_MUTEX_HANDOFF_NS=20000 \
			run lk_spin2us_handoff20us --lock lk_mutex --cs-ns $c
		for l in absl_mutex rust_parking_lot glibc_normal; do
			run $l --lock $l --cs-ns $c
		done
	done
done
