#!/usr/bin/env bash
# spin_ttas's unlock as one store (README.md here; quiet machine). Two parts:
#   screen - 7 alternating rounds of 0.3 s per cell: the checked unlock (the commit before the change,
#            4a8b01c, built in a scratch worktree; renamed ttas_main), the store alone (this
#            checkout's build; ttas_nocheck), tbb_spin_mutex and ck_fas: screen.jsonl. (The file here
#            was made before the change was committed, with stop 17's ttas-unlock.patch, -DTTAS_NO_CHECK,
#            on 5f2c391 as ttas_nocheck and main's build as ttas_main: the same two unlocks.)
#   suite  - locklab suite --only issue11-spin,seed004-spinlock: issue11-spin.json,
#            seed004-spinlock.json, summary.md and terminal.txt here.
# Needs `make build` in this checkout. Usage: run.sh screen|suite
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
case "${1:-}" in
screen)
	wt="${CHECK_TREE:-/tmp/locklab-ttas-check}"
	[ -d "$wt" ] || git -C "$repo" worktree add --quiet --detach "$wt" 4a8b01c
	cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	ninja -C "$wt/build" locklab-bench >/dev/null
	export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# the wide matrix's calibration
	rename() { sed "s/\"lock\":\"spin_ttas\"/\"lock\":\"$1\"/g"; }
	for rep in 1 2 3 4 5 6 7; do
		for cell in "1 1 0" "2 1 0" "2 100 0" "3 100 0" "3 1 0" "4 1 0" "2 1 10" "8 1 0"; do
			set -- $cell
			a="--threads $1 --cs-ns $2 --parallel-ratio $3 --duration 0.3 --warmup 0.05"
			"$wt/build/locklab-bench" spinlock --lock spin_ttas $a | rename ttas_main
			"$repo/build/locklab-bench" spinlock --lock spin_ttas $a | rename ttas_nocheck
			"$repo/build/locklab-bench" spinlock --lock tbb_spin_mutex $a
			"$repo/build/locklab-bench" spinlock --lock ck_fas $a
		done
	done > "$here/screen.jsonl" ;;
suite)
	cd "$repo"
	.venv/bin/locklab suite --only issue11-spin,seed004-spinlock --out "$here" --no-progress |
		tee "$here/terminal.txt" ;;
*)
	echo "usage: $0 screen|suite" >&2; exit 2 ;;
esac
