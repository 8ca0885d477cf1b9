#!/usr/bin/env bash
# A would-be parker that probes its CPU with sched_yield() (README.md here; quiet machine).
#   diag    - lk_mutex as shipped, lk_mutex with handoff_ns 50 ms, rust_std and rust_parking_lot at
#             the 2 us / ratio-1 cells and 16/100/1; statistics build of main: handoff-diag.jsonl
#   screen  - the scratch variants of alone.patch (84bbd9d) against lk_mutex_v_base: screen1-4.jsonl
#   counters - the statistics build of alone.patch, lk_mutex_v_alone_any: the probe's events per op
# Usage: run.sh diag|screen|counters      (from anywhere; writes into this directory)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# as issue11-2core-shared-calib/ (a fixed loop count per ns)
run_cells() { "$repo/scripts/run-cells" "$@"; }	# ROUNDS DRIVER "T C R|..." LOCK...
tree() {	# the patched tree's driver, built with the lab variants (and the counters when $1 = stats)
	local s=()
	[ "${1:-}" = stats ] && s=(--stats)
	drv="$("$repo/scripts/variant-driver" "${s[@]}" 84bbd9d "$here/alone.patch" "${ALONE_TREE:-/tmp/locklab-alone}")"
}
all="32 1 100|64 1 100|4 1 100|16 100 1|32 100 1|256 100 1|16 2000 1|2 1 0|8 1 0|256 1 0|4 100 10|64 100 10|8 2000 1|32 2000 1|256 2000 1|3 1 0"
case "${1:-}" in
diag)
	make -C "$repo" build-stats >/dev/null
	cd "$repo" && REPS=3 CELLS="8 2000 1|32 2000 1|256 2000 1|16 100 1" \
		docs/results/issue11-2core-ratio1-handoff/run.sh > "$here/handoff-diag.jsonl" ;;
screen)
	tree
	run_cells 5 "$drv" "$all" lk_mutex_v_base lk_mutex_v_alone_any rust_parking_lot > "$here/screen1.jsonl"
	run_cells 5 "$drv" "3 1 0|8 1 0|8 2000 1|16 2000 1|256 2000 1|16 100 1|4 100 10|8 2000 0|64 1 100|32 2000 1" \
		lk_mutex_v_base lk_mutex_v_alone_est500 > "$here/screen2.jsonl"
	run_cells 5 "$drv" "3 1 0|8 1 0|8 2000 1|16 2000 1|256 2000 1|16 100 1" \
		lk_mutex_v_base lk_mutex_v_alone_any lk_mutex_v_alone_est100 lk_mutex_v_alone_est250 > "$here/screen3.jsonl"
	run_cells 5 "$drv" "3 1 0|8 1 0|8 2000 1|16 2000 1|256 2000 1|16 100 1|32 2000 1|4 1 100|32 1 100" \
		lk_mutex_v_base lk_mutex_v_alone_any lk_mutex_v_alone_away1000 lk_mutex_v_alone_away2500 > "$here/screen4.jsonl" ;;
counters)
	tree stats
	DUR=0.5 run_cells 3 "$drv" "3 1 0|8 1 0|8 2000 1|32 2000 1|16 100 1|4 1 100" \
		lk_mutex_v_alone_any > "$here/counters.jsonl" ;;
*)
	echo "usage: $0 diag|screen|counters" >&2; exit 2 ;;
esac
