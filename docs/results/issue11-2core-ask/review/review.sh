#!/usr/bin/env bash
# review.sh - the hostile review's two shapes where the spinner's ask costs throughput (stop 33),
# each run with the ask off (the default) and on (ASK=1), interleaved, 3 rounds:
#   line    2 threads; each critical section does 1500 increments of a counter on the lock word's
#           own cache line (same) or on a line of its own (own); 1.5 s per run
#   preempt 2 threads with 2 us critical sections, nothing outside, pinned one per CPU, and a CPU
#           hog (another process) sharing the second thread's CPU; 2 s per run
# Builds the programs against build/liblocklab.a (make build first). Writes review.txt next to
# this script. About 1 minute. Run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
lib=$root/build/liblocklab.a
[ -f "$lib" ] || { echo "review.sh: $lib is not built (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in line pair3 hog; do
	gcc -O2 -g -pthread -I"$root/include" -o "$tmp/$p" "$here/$p.c" "$lib"
done
{
	uname -r; grep -m1 "model name" /proc/cpuinfo; nproc
	for round in 1 2 3; do
		for ask in 0 1; do
			for same in 1 0; do
				echo "round $round ask=$ask: $(ASK=$ask "$tmp/line" 1500 $same 1.5)"
			done
			"$tmp/hog" 2.6 1 &
			sleep 0.05
			echo "round $round ask=$ask preempt: $(ASK=$ask PIN=1 "$tmp/pair3" 2 2000 0 none 0 0 2 | tr '\n' ' ')"
			wait
		done
	done
} > "$here/review.txt"
cat "$here/review.txt"
