#!/usr/bin/env bash
# A second woken waiter in flight (screening A/B, quiet machine; README.md here). Builds main's
# commit 14c3573 with wake2.patch into a scratch worktree's build-ab, then 3 alternating rounds of
# 0.5 s runs (ab.jsonl): lk_mutex_v_base (the control) against the variants w2, w4, w8 and rust_parking_lot,
# every run with the wide matrix's calibration. Tables: scripts/cell-stats on ab.jsonl.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
wt="$("$repo/scripts/patched-tree" 14c3573 "$here/wake2.patch" "${WAKE2_TREE:-/tmp/locklab-wake2}")"
cmake -S "$wt" -B "$wt/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
ninja -C "$wt/build-ab" locklab-bench >/dev/null
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
for rep in 1 2 3; do
  for cell in "32 1 100" "64 1 100" "16 100 1" "32 100 1" "3 100 10" "4 100 10" "8 1 0" "256 1 0" "2 1 0" "16 2000 1" "256 100 1" "64 100 10"; do
    set -- $cell
    for lock in lk_mutex_v_base lk_mutex_v_w2 lk_mutex_v_w4 lk_mutex_v_w8 rust_parking_lot; do
      "$wt/build-ab/locklab-bench" mutex --lock $lock --threads $1 --cs-ns $2 --parallel-ratio $3 --duration 0.5 --warmup 0.05
    done
  done
done > "$here/ab.jsonl"
# Second round on the cells the first one flagged: control, w4, w8, 7 alternating rounds
for rep in 1 2 3 4 5 6 7; do
  for cell in "32 1 100" "64 1 100" "16 100 1" "32 100 1" "256 100 1" "16 2000 1" "64 100 10" "256 1 100"; do
    set -- $cell
    for lock in lk_mutex_v_base lk_mutex_v_w4 lk_mutex_v_w8; do
      "$wt/build-ab/locklab-bench" mutex --lock $lock --threads $1 --cs-ns $2 --parallel-ratio $3 --duration 0.5 --warmup 0.05
    done
  done
done > "$here/ab2.jsonl"
