#!/usr/bin/env bash
# run.sh - the extra-spinner variants of lk_mutex (LKM_CROWD, src/mutex.c) screened on 2 CPUs:
# lk_mutex_v_crowd (at most the online CPUs minus two extra spinners: none here), and
# lk_mutex_v_crowdany (2 extra spinners whatever the CPU count) against lk_mutex_v_base, 5
# interleaved rounds of 10 cells (scripts/run-cells), with the wide matrix's busy-loop calibration.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cmake -S . -B build-ab -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
cmake --build build-ab --target locklab-bench >/dev/null
out=docs/results/issue11-crowd-2core
LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473 scripts/run-cells 5 build-ab/locklab-bench \
	"2 1 0|2 100 0|3 1 0|3 100 0|4 1 10|4 100 10|8 100 0|8 2000 1|64 1 10|256 100 0" \
	lk_mutex_v_base lk_mutex_v_crowd lk_mutex_v_crowdany > "$out/screen.jsonl"
.venv/bin/python scripts/ab-table --control lk_mutex_v_base \
	--candidates lk_mutex_v_crowd,lk_mutex_v_crowdany "$out/screen.jsonl"
