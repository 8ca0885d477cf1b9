#!/usr/bin/env bash
# run.sh - the extra-wake variants of lk_mutex (LKM_WAKE_MORE, src/mutex.c) screened on 2 CPUs.
#
#   docs/results/issue11-wake-more-2core/run.sh [counters] [screen] [screen2]   (default: all three)
#
# counters: the statistics build's woken-waiter outcomes (mutex_woken_took, mutex_woken_repark)
# for lk_mutex_v_base in the cells the earlier wake2 screen moved, 3 rounds (counters.jsonl).
# screen: lk_mutex_v_wm1, _wm2 and _wm4 against lk_mutex_v_base, 5 interleaved rounds of 10 cells
# (screen1.jsonl). screen2: wm2 against base on 12 more shapes, 5 rounds (screen2.jsonl). Every
# run uses the wide matrix's busy-loop calibration. Read with scripts/ab-table and scripts/cell-stats.
set -euo pipefail
cd "$(dirname "$0")/../../.."
stages=${*:-counters screen screen2}
out=docs/results/issue11-wake-more-2core
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
for stage in $stages; do
	case $stage in
	counters)
		cmake -S . -B build-ab-stats -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON \
			-DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
		cmake --build build-ab-stats --target locklab-bench >/dev/null
		DUR=0.5 scripts/run-cells 3 build-ab-stats/locklab-bench \
			"3 1 0|8 1 0|8 2000 1|16 100 1|16 2000 1|32 1 100|64 1 100|64 100 10|256 100 1" \
			lk_mutex_v_base > "$out/counters.jsonl" ;;
	screen)
		cmake -S . -B build-ab -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
		cmake --build build-ab --target locklab-bench >/dev/null
		scripts/run-cells 5 build-ab/locklab-bench \
			"32 1 100|64 1 100|16 100 1|64 100 10|256 100 1|16 2000 1|8 2000 1|8 1 0|4 1 100|3 1 0" \
			lk_mutex_v_base lk_mutex_v_wm1 lk_mutex_v_wm2 lk_mutex_v_wm4 > "$out/screen1.jsonl"
		$py scripts/ab-table --control lk_mutex_v_base \
			--candidates lk_mutex_v_wm1,lk_mutex_v_wm2,lk_mutex_v_wm4 "$out/screen1.jsonl" ;;
	screen2)
		cmake -S . -B build-ab -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
		cmake --build build-ab --target locklab-bench >/dev/null
		scripts/run-cells 5 build-ab/locklab-bench \
			"2 1 0|2 100 1|4 100 10|8 100 0|16 1 10|32 1 10|32 2000 1|64 1 10|128 1 100|256 1 100|256 2000 10|32 100 100" \
			lk_mutex_v_base lk_mutex_v_wm2 > "$out/screen2.jsonl"
		$py scripts/ab-table --control lk_mutex_v_base --candidates lk_mutex_v_wm2 "$out/screen2.jsonl" ;;
	*) echo "run.sh: unknown stage '$stage' (expected counters, screen or screen2)" >&2; exit 2 ;;
	esac
done
