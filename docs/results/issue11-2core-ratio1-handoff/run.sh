#!/usr/bin/env bash
# Issue 11, the ratio-1 losses: what the bounded-wait handoffs cost where threads outnumber CPUs.
# lk_mutex as shipped (handoff_ns 1 ms) against lk_mutex with handoff_ns 50 ms (almost no waiter
# ever becomes owed in a 0.5 s run) and the two peers that win these cells. Statistics build: the
# slow-path counters (parks, wakes, handoffs). Run from the repository root on a quiet machine:
#   make build-stats && docs/results/issue11-2core-ratio1-handoff/run.sh > results.jsonl
#   .venv/bin/python scripts/cell-stats results.jsonl
# REPS and CELLS ("T C R|T C R|...") change the repeats and cells (../issue11-2core-alone-probe/ uses them).
set -euo pipefail
B=build-stats/locklab-bench
IFS="|" read -r -a cells <<< "${CELLS:-16 100 1|32 100 1|4 100 1|32 2000 10}"
for rep in $(seq "${REPS:-5}"); do
  for cell in "${cells[@]}"; do
    set -- $cell
    args=(mutex --threads "$1" --cs-ns "$2" --parallel-ratio "$3" --duration 0.5 --warmup 0.05)
    "$B" "${args[@]}" --lock lk_mutex
    LOCKLAB_MUTEX_HANDOFF_NS=50000000 "$B" "${args[@]}" --lock lk_mutex |
      sed 's/"lock":"lk_mutex"/"lock":"lk_mutex_handoff50ms"/'
    "$B" "${args[@]}" --lock rust_std
    "$B" "${args[@]}" --lock rust_parking_lot
  done
done
