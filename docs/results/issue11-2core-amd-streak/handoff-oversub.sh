#!/usr/bin/env bash
# handoff-oversub.sh - oversubscribed cells: lk_mutex with handoff_ns 1 ms (the default), 200 us and
# 50 us (LOCKLAB_MUTEX_HANDOFF_NS) beside rust_parking_lot, in 5 interleaved rounds of 0.3 s runs.
# JSON lines on stdout, each run tagged with "cfg". Read them with oversub.py.
set -euo pipefail
D=${LOCKLAB_BENCH:-build/locklab-bench}
[ -x "$D" ] || { echo "handoff-oversub.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
for _ in 1 2 3 4 5; do
	for cell in "32 2000 10" "64 2000 10" "256 100 100" "256 2000 1"; do
		read -r t c p <<< "$cell"
		for h in 1000000 200000 50000; do
			LOCKLAB_MUTEX_HANDOFF_NS=$h "$D" mutex --lock lk_mutex --threads "$t" --cs-ns "$c" \
				--parallel-ratio "$p" --duration 0.3 --warmup 0.05 |
				sed "s/^{/{\"cfg\":\"lk_handoff$((h / 1000))us\",/"
		done
		"$D" mutex --lock rust_parking_lot --threads "$t" --cs-ns "$c" --parallel-ratio "$p" \
			--duration 0.3 --warmup 0.05 | sed "s/^{/{\"cfg\":\"rust_parking_lot\",/"
	done
done
