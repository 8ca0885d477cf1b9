#!/usr/bin/env bash
# Where lk_mutex's CPU per op and idle CPUs come from (quiet machine): statistics build, 1 s runs,
# lk_mutex against rust_parking_lot and glibc_normal, 3 rounds, every run with the calibration the
# wide matrix (issue11-mutex.json here) used. Needs `make build-stats`. Tables:
#   scripts/cell-stats docs/results/issue11-2core-shared-calib/diag.jsonl
cd "$(dirname "$0")/../../.."
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
for rep in 1 2 3; do
  for cell in "16 2000 100" "64 1 100" "32 1 100" "8 2000 10" "32 2000 10" "16 2000 1"; do
    set -- $cell
    for lock in lk_mutex rust_parking_lot glibc_normal; do
      build-stats/locklab-bench mutex --lock $lock --threads $1 --cs-ns $2 --parallel-ratio $3 --duration 1 --warmup 0.05
    done
  done
done > "$(dirname "$0")/diag.jsonl"
