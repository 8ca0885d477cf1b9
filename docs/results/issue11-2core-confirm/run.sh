#!/usr/bin/env bash
# A spinner confirms a free lock before it takes it (README.md here; quiet machine). Three parts:
#   screen  - the scratch variants of confirm.patch on dcb02ba (first-look's screen.patch and these:
#             LKM_CONFIRM / LKM_HOT_BACKOFF in relax rounds: cNhM confirms
#             after N relaxes and then looks every M; sK enters the hot interval after K failed
#             confirmations; gK stops confirming after K) against lk_mutex_v_base: screen1.jsonl,
#             screen2.jsonl
#   scratch - c2h64 against base on the whole issue-11 matrix: ab-wide-scratch.json
#   wide    - the mechanism as landed in cc2268d (its lk_mutex_v_base, the defaults in ns) against the
#             design before it (its lk_mutex_v_noconfirm) on the whole matrix: ab-wide.json
#   recheck - cc2268d's two, 7 rounds at five cells the wide run read low: recheck.jsonl
#   shapes  - the scratch variants at 2 threads with 40 and 60 ns inside and 1x outside:
#             shapes1.jsonl, shapes2.jsonl
# Usage: run.sh screen|scratch|wide|recheck|shapes      (from anywhere; writes into this directory)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# as issue11-2core-shared-calib/ (a fixed loop count per ns)
run_cells() { "$repo/scripts/run-cells" "$@"; }	# ROUNDS DRIVER "T C R|..." LOCK...
tree() {	# the scratch tree's driver (confirm.patch holds first-look's variants too)
	drv="$("$repo/scripts/variant-driver" dcb02ba "$here/confirm.patch" "${CONFIRM_TREE:-/tmp/locklab-confirm}")"
}
case "${1:-}" in
screen)
	tree
	run_cells 5 "$drv" "2 1 0|2 1 10|2 100 1|4 100 1|8 100 1|64 100 1|3 1 0|2 2000 1|4 1 0" lk_mutex_v_base \
		lk_mutex_v_c2h64 lk_mutex_v_c4h64 lk_mutex_v_c4h32 lk_mutex_v_c8h64 rust_std > "$here/screen1.jsonl"
	run_cells 7 "$drv" "2 1 0|2 1 1|2 1 10|2 100 0|2 100 1|2 100 10|3 100 1|3 1 10|4 100 10|16 100 1" \
		lk_mutex_v_base lk_mutex_v_c1h64 lk_mutex_v_c2h64 lk_mutex_v_c2h32 rust_std rust_parking_lot > "$here/screen2.jsonl" ;;
scratch)
	tree
	"$repo/scripts/ab-wide" "$drv" "$here/ab-wide-scratch.json" lk_mutex_v_base lk_mutex_v_c2h64 ;;
wide|recheck)
	wt="${LANDED_TREE:-/tmp/locklab-confirm-landed}"
	[ -d "$wt" ] || git -C "$repo" worktree add --quiet --detach "$wt" cc2268d
	cmake -S "$wt" -B "$wt/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
	cmake --build "$wt/build-ab" -j2 --target locklab-bench >/dev/null
	if [ "$1" = recheck ]; then
		run_cells 7 "$wt/build-ab/locklab-bench" "4 2000 0|2 1 100|3 2000 0|8 2000 0|4 2000 1" \
			lk_mutex_v_base lk_mutex_v_noconfirm > "$here/recheck.jsonl"
		exit 0
	fi
	"$repo/scripts/ab-wide" "$wt/build-ab/locklab-bench" "$here/ab-wide.json" lk_mutex_v_noconfirm lk_mutex_v_base ;;
shapes)
	tree
	run_cells 7 "$drv" "2 1 0|2 1 10|3 1 0|2 100 1|2 60 1|3 60 1|2 40 1|4 100 1" lk_mutex_v_base \
		lk_mutex_v_c2h64 lk_mutex_v_c2h64s2 lk_mutex_v_c2h64s3 lk_mutex_v_c2h1 lk_mutex_v_c2h32 > "$here/shapes1.jsonl"
	run_cells 7 "$drv" "2 1 0|2 1 10|3 1 0|2 40 1|2 60 1|2 100 1|4 100 1" lk_mutex_v_base \
		lk_mutex_v_c2h64 lk_mutex_v_c2h64g2 lk_mutex_v_c2h64g4 lk_mutex_v_c2h1g2 > "$here/shapes2.jsonl" ;;
*)
	echo "usage: $0 screen|scratch|wide|recheck|shapes" >&2; exit 2 ;;
esac
