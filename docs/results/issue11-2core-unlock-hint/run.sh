#!/usr/bin/env bash
# lk_mutex_unlock(): a load before the CAS, always or after a per-thread hint (README.md here; quiet
# machine). Three parts:
#   screen - the scratch variants of screen.patch (5f2c391): ldun (always load first), hint (load
#            first after this thread's last unlock found other bits), bo64 (spinner backoff up to 64
#            relaxes), ldunbo and hintbo (both) against lk_mutex_v_base: screen1.jsonl, screen2.jsonl
#   wide   - hint.patch (5f2c391; the hint as default, lk_mutex_v_nohint the design before) on the
#            whole issue-11 matrix: ab-wide.json
#   absl   - the same tree, hint and nohint beside absl_mutex at the 3-16 thread / 1 ns cells where
#            the hint raised p99: p99-absl.jsonl
# Usage: run.sh screen|wide|absl      (from anywhere; writes into this directory)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473	# as issue11-2core-shared-calib/ (a fixed loop count per ns)
run_cells() {	# run_cells ROUNDS DRIVER "T C R|T C R|..." LOCK...
	local rounds=$1 drv=$2 cells lock; shift 2
	IFS="|" read -r -a cells <<< "$1"; shift
	for rep in $(seq "$rounds"); do
		for cell in "${cells[@]}"; do
			set -- $cell "$@"
			local t=$1 c=$2 r=$3; shift 3
			for lock in "$@"; do
				"$drv" mutex --lock "$lock" --threads "$t" --cs-ns "$c" --parallel-ratio "$r" \
					--duration 0.3 --warmup 0.05
			done
		done
	done
}
tree() {	# tree PATCH DIR: the patched tree at 5f2c391, built with the lab variants
	wt="$("$repo/scripts/patched-tree" 5f2c391 "$here/$1" "$2")"
	cmake -S "$wt" -B "$wt/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
	cmake --build "$wt/build-ab" -j2 --target locklab-bench >/dev/null
	drv="$wt/build-ab/locklab-bench"
}
case "${1:-}" in
screen)
	tree screen.patch "${SCREEN_TREE:-/tmp/locklab-unlock-screen}"
	run_cells 5 "$drv" "2 1 0|2 1 1|2 1 10|1 1 0|3 1 0|4 1 0|8 1 0|256 1 0|64 1 100|16 100 1|4 100 10|32 2000 1|256 100 1" \
		lk_mutex_v_base lk_mutex_v_ldun lk_mutex_v_ldunbo lk_mutex_v_bo64 rust_parking_lot > "$here/screen1.jsonl"
	run_cells 5 "$drv" "1 1 0|2 1 0|2 1 10|3 1 0|4 1 0|8 1 0|8 100 0|256 1 0|64 1 100|16 100 1" \
		lk_mutex_v_base lk_mutex_v_ldun lk_mutex_v_hint lk_mutex_v_hintbo lk_mutex_v_bo64 rust_parking_lot > "$here/screen2.jsonl" ;;
wide)
	tree hint.patch "${HINT_TREE:-/tmp/locklab-unlock-hint}"
	unset LOCKLAB_BUSY_NS_PER_ITER	# locklab bench shares its own first run's calibration
	cd "$repo"
	LOCKLAB_BENCH="$drv" .venv/bin/locklab bench mutex \
		--lock lk_mutex_v_base,lk_mutex_v_nohint --threads 1,2,3,4,8,16,32,64,256 \
		--cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 --duration 0.2 --warmup 0.05 --repeat 5 \
		--baseline lk_mutex_v_nohint --out "$here/ab-wide.json" ;;
absl)
	tree hint.patch "${HINT_TREE:-/tmp/locklab-unlock-hint}"
	run_cells 7 "$drv" "3 1 0|3 1 10|4 1 0|4 1 10|8 1 10|16 1 10" \
		lk_mutex_v_base lk_mutex_v_nohint absl_mutex > "$here/p99-absl.jsonl" ;;
*)
	echo "usage: $0 screen|wide|absl" >&2; exit 2 ;;
esac
