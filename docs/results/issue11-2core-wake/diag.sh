#!/usr/bin/env bash
# per-cell slow-path counters and CPU utilisation for the oversubscription losses (quiet machine)
cd "$(dirname "$0")/../../.."
for cell in "8 100 10" "32 100 10" "16 100 1" "8 2000 1" "256 2000 1" "2 1 0"; do
  set -- $cell
  for lock in lk_mutex rust_parking_lot; do
    for rep in 1 2 3; do
      build-stats/locklab-bench mutex --lock $lock --threads $1 --cs-ns $2 --parallel-ratio $3 --duration 0.5 --warmup 0.05
    done
  done
done > diag.jsonl
