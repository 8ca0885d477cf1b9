#!/usr/bin/env bash
# trace.sh - where the waits go at 256 threads / 100 ns / 100x: every futex() and sched_yield() of a
# 1 s run of futex3, rust_parking_lot and lk_mutex (2 runs each), recorded with perf's syscall
# tracepoints and summed by trace.py: calls, how many lasted over 1 ms, and the seconds spent in
# them (divided by the run's length: threads asleep or yielding on average). Needs perf with
# tracepoint access (root) and the normal build (make build). Writes trace.txt. About a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "trace.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
command -v perf >/dev/null || { echo "trace.sh: needs perf (Debian: linux-perf)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	for i in 1 2; do
		for l in futex3 rust_parking_lot lk_mutex; do
			perf record -q -o "$tmp/p.data" -e 'syscalls:sys_enter_futex,syscalls:sys_exit_futex' \
				-e 'syscalls:sys_enter_sched_yield,syscalls:sys_exit_sched_yield' -- \
				"$D" mutex --lock "$l" --threads 256 --cs-ns 100 --parallel-ratio 100 --duration 1 \
				> "$tmp/run.json" 2>/dev/null
			perf script -i "$tmp/p.data" -F tid,time,event,trace 2>/dev/null |
				python3 "$here/trace.py" "$l" "$tmp/run.json"
		done
	done
} > "$here/trace.txt"
cat "$here/trace.txt"
