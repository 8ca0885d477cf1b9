#!/usr/bin/env bash
# When the spinner first looks at the word (README.md here; quiet machine). The scratch variants of
# screen.patch (dcb02ba) against lk_mutex_v_base:
#   counters - statistics build, 2 threads / 1 ns / 0: spins and successes per op for base, bo64,
#              bo256 (3 rounds of 0.5 s): two-thread-counters.jsonl
#   slot     - the side table's line: noest (no EWMA store), noslot (that and no S timestamp) and
#              nowaityield: screen-slot.jsonl
#   screen   - d16 (first look after 16 relaxes), d16bo, d64bo, bo64 on 9 cells: screen1.jsonl;
#              d32bo32, d16bo32, d64bo with rust_std and rust_parking_lot on 8: screen2.jsonl
#   wide     - d16bo and d64bo against base on the whole issue-11 matrix: ab-wide.json
# Usage: run.sh counters|slot|screen|wide      (from anywhere; writes into this directory)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# as issue11-2core-shared-calib/ (a fixed loop count per ns)
run_cells() { "$repo/scripts/run-cells" "$@"; }	# ROUNDS DRIVER "T C R|..." LOCK...
tree() {	# the patched tree's driver, built with the lab variants (and the counters when $1 = stats)
	local s=()
	[ "${1:-}" = stats ] && s=(--stats)
	drv="$("$repo/scripts/variant-driver" "${s[@]}" dcb02ba "$here/screen.patch" "${LOOK_TREE:-/tmp/locklab-first-look}")"
}
case "${1:-}" in
counters)
	tree stats
	DUR=0.5 run_cells 3 "$drv" "2 1 0" lk_mutex_v_base lk_mutex_v_bo64 lk_mutex_v_bo256 > "$here/two-thread-counters.jsonl" ;;
slot)
	tree
	run_cells 5 "$drv" "2 1 0|2 1 1|2 1 10|3 1 0|4 1 0|8 1 0|16 100 1|1 1 0" lk_mutex_v_base \
		lk_mutex_v_nowaityield lk_mutex_v_noest lk_mutex_v_noslot rust_parking_lot > "$here/screen-slot.jsonl" ;;
screen)
	tree
	run_cells 5 "$drv" "2 1 0|2 1 10|3 1 0|4 1 0|8 1 0|8 100 0|16 100 1|4 100 10|256 1 0" lk_mutex_v_base \
		lk_mutex_v_d16 lk_mutex_v_d16bo lk_mutex_v_d64bo lk_mutex_v_bo64 rust_parking_lot > "$here/screen1.jsonl"
	run_cells 5 "$drv" "2 1 0|2 1 10|2 100 1|4 100 1|8 100 1|64 100 1|3 1 0|2 2000 1" lk_mutex_v_base \
		lk_mutex_v_d32bo32 lk_mutex_v_d16bo32 lk_mutex_v_d64bo rust_std rust_parking_lot > "$here/screen2.jsonl" ;;
wide)
	tree
	"$repo/scripts/ab-wide" "$drv" "$here/ab-wide.json" lk_mutex_v_base lk_mutex_v_d16bo lk_mutex_v_d64bo ;;
*)
	echo "usage: $0 counters|slot|screen|wide" >&2; exit 2 ;;
esac
