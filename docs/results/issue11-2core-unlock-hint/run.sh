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
run_cells() { "$repo/scripts/run-cells" "$@"; }	# ROUNDS DRIVER "T C R|..." LOCK...
tree() {	# tree PATCH DIR: the driver of the patched tree at 5f2c391, built with the lab variants
	drv="$("$repo/scripts/variant-driver" 5f2c391 "$here/$1" "$2")"
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
	"$repo/scripts/ab-wide" "$drv" "$here/ab-wide.json" lk_mutex_v_nohint lk_mutex_v_base ;;
absl)
	tree hint.patch "${HINT_TREE:-/tmp/locklab-unlock-hint}"
	run_cells 7 "$drv" "3 1 0|3 1 10|4 1 0|4 1 10|8 1 10|16 1 10" \
		lk_mutex_v_base lk_mutex_v_nohint absl_mutex > "$here/p99-absl.jsonl" ;;
*)
	echo "usage: $0 screen|wide|absl" >&2; exit 2 ;;
esac
