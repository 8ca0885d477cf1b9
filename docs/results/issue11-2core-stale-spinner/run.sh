#!/usr/bin/env bash
# Waiters behind a stuck spinner (README.md here; quiet machine). Three parts:
#   diag   - how long a woken waiter (W) stays in flight, and on which CPU it runs: main's commit
#            518c458 with wdiag.patch (prints WDIAG lines on stderr), 1 s runs of lk_mutex.
#   screen - the scratch variants of screen.patch (518c458) against lk_mutex_v_base: screen1-4.jsonl.
#   wide   - the landed LKM_WAIT_YIELDS (lk_mutex_v_base) against the design before it
#            (lk_mutex_v_nowaityield) on the whole issue-11 matrix: ab-wide.json. Run from the
#            commit that landed it, with a driver built with the lab variants (build-ab).
#   control - right after the suite (suite/): both designs and both Rust mutexes at 2 µs / 1x:
#            control-2us.json.
# Usage: run.sh diag|screen|wide|control
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# the shared-calib wide matrix's calibration
cells=("32 1 100" "64 1 100" "4 1 100" "16 100 1" "32 100 1" "256 100 1" "16 2000 1" "2 1 0" "8 1 0" "256 1 0" "4 100 10" "64 100 10")
screen() {	# screen N ROUNDS LOCK...
	local n=$1 rounds=$2; shift 2
	for rep in $(seq "$rounds"); do
		for cell in "${cells[@]}"; do
			set -- $cell "$@"
			local t=$1 c=$2 r=$3; shift 3
			for lock in "$@"; do
				"$wt/build-ab/locklab-bench" mutex --lock "$lock" --threads "$t" --cs-ns "$c" \
					--parallel-ratio "$r" --duration 0.5 --warmup 0.05
			done
		done
	done > "$here/screen$n.jsonl"
}
case "${1:-}" in
diag)
	wt="$("$repo/scripts/patched-tree" 518c458 "$here/wdiag.patch" "${WDIAG_TREE:-/tmp/locklab-wdiag}")"
	cmake -S "$wt" -B "$wt/build-diag" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS="-DLK_DIAG_W -D_GNU_SOURCE" >/dev/null
	ninja -C "$wt/build-diag" locklab-bench >/dev/null
	for cell in "4 1 100" "32 1 100" "64 1 100" "16 100 1" "256 100 1" "16 2000 1"; do
		set -- $cell
		echo "== $cell"
		"$wt/build-diag/locklab-bench" mutex --lock lk_mutex --threads "$1" --cs-ns "$2" \
			--parallel-ratio "$3" --duration 1 --warmup 0.05 2>&1 >/dev/null | grep WDIAG
	done ;;
screen)
	wt="$("$repo/scripts/patched-tree" 518c458 "$here/screen.patch" "${SCREEN_TREE:-/tmp/locklab-screen}")"
	cmake -S "$wt" -B "$wt/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
	ninja -C "$wt/build-ab" locklab-bench >/dev/null
	screen 1 5 lk_mutex_v_base lk_mutex_v_wst50 lk_mutex_v_wst200 rust_parking_lot
	screen 2 5 lk_mutex_v_base lk_mutex_v_ny2 lk_mutex_v_ny8 lk_mutex_v_ny2w lk_mutex_v_wst50
	screen 3 5 lk_mutex_v_base lk_mutex_v_ny2 lk_mutex_v_nys4 lk_mutex_v_nys4b
	screen 4 7 lk_mutex_v_base lk_mutex_v_nys4 lk_mutex_v_nyb4 ;;
wide)
	cmake -S "$repo" -B "$repo/build-ab" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
	cmake --build "$repo/build-ab" -j2 --target locklab-bench >/dev/null
	unset LOCKLAB_BUSY_NS_PER_ITER	# locklab bench shares its own first run's calibration
	cd "$repo"
	LOCKLAB_BENCH="$repo/build-ab/locklab-bench" .venv/bin/locklab bench mutex \
		--lock lk_mutex_v_base,lk_mutex_v_nowaityield --threads 1,2,3,4,8,16,32,64,256 \
		--cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 --duration 0.2 --warmup 0.05 --repeat 5 \
		--baseline lk_mutex_v_nowaityield --out "$here/ab-wide.json" ;;
control)
	cmake -S "$repo" -B "$repo/build-ab" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
	cmake --build "$repo/build-ab" -j2 --target locklab-bench >/dev/null
	unset LOCKLAB_BUSY_NS_PER_ITER
	cd "$repo"
	LOCKLAB_BENCH="$repo/build-ab/locklab-bench" .venv/bin/locklab bench mutex \
		--lock lk_mutex_v_base,lk_mutex_v_nowaityield,rust_std,rust_parking_lot --threads 2,8,32,256 \
		--cs-ns 2000 --parallel-ratio 1 --duration 0.2 --warmup 0.05 --repeat 5 \
		--baseline lk_mutex_v_nowaityield --out "$here/control-2us.json" ;;
*)
	echo "usage: $0 diag|screen|wide|control" >&2; exit 2 ;;
esac
