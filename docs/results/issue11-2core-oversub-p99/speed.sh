#!/usr/bin/env bash
# speed.sh - 256 threads / 100 ns / 100x, 1 s runs of futex3, lk_mutex and rust_parking_lot in turn
# (ROUNDS rounds, default 6), each printed with its window_work_speed: how fast the calibrated busy
# loops ran inside the window, against the calibration at start-up (1 = as fast; the guest's CPUs
# run at about half speed for seconds at a time). Needs the normal build (make build). Writes
# speed.txt. About 10 s a round.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "speed.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for ((i = 1; i <= ${ROUNDS:-6}; i++)); do
	for l in futex3 lk_mutex rust_parking_lot; do
		"$D" mutex --lock "$l" --threads 256 --cs-ns 100 --parallel-ratio 100 --duration 1 > "$tmp" 2>/dev/null
		python3 - "$l" "$tmp" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))["result"]
print("%-17s %5.0fk ops/s  p99 %10.1f us  window_work_speed %.2f  Jain %.2f" % (
    sys.argv[1], r["ops_per_sec"] / 1e3, r["latency"]["p99_ns"] / 1e3, r["window_work_speed"],
    r["fairness_jain"]))
PY
	done
done | tee "$here/speed.txt"
