#!/usr/bin/env bash
# spin_ttas's unlock: what its EPERM read costs (README.md here). Builds three scratch variants of
# the commit below with ttas-unlock.patch (each one -D flag), then two sets of 7 alternating rounds of
# 0.5 s runs against main's build (the control, renamed ttas_main) and tbb_spin_mutex, with the wide
# matrix's calibration. Needs `make build` in this checkout. Tables:
#   scripts/ab-table --control ttas_main --candidates ttas_nocheck,ttas_xchg,tbb_spin_mutex ab2.jsonl
#   scripts/ab-table --control ttas_main --candidates ttas_nocheck,ttas_ldst,tbb_spin_mutex ab3.jsonl
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
wt="$("$repo/scripts/patched-tree" 8b7f110 "$here/ttas-unlock.patch" "${TTAS_TREE:-/tmp/locklab-ttas-unlock}")"
for v in nc:TTAS_NO_CHECK xc:TTAS_XCHG_UNLOCK ls:TTAS_LOAD_STORE; do
  cmake -S "$wt" -B "$wt/build-${v%%:*}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS=-D${v#*:} -DCMAKE_CXX_FLAGS=-D${v#*:} >/dev/null
  ninja -C "$wt/build-${v%%:*}" locklab-bench >/dev/null
done
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
rename() { sed "s/\"lock\":\"spin_ttas\"/\"lock\":\"$1\"/g"; }
for set in 2:xc:ttas_xchg 3:ls:ttas_ldst; do
  IFS=: read -r n b name <<<"$set"
  for rep in 1 2 3 4 5 6 7; do
    for cell in "1 1 0" "2 1 0" "3 1 0" "4 1 0" "2 1 10" "8 1 0"; do
      set -- $cell
      a="--threads $1 --cs-ns $2 --parallel-ratio $3 --duration 0.5 --warmup 0.05"
      "$repo/build/locklab-bench" spinlock --lock spin_ttas $a | rename ttas_main
      "$wt/build-nc/locklab-bench" spinlock --lock spin_ttas $a | rename ttas_nocheck
      "$wt/build-$b/locklab-bench" spinlock --lock spin_ttas $a | rename $name
      "$repo/build/locklab-bench" spinlock --lock tbb_spin_mutex $a
    done
  done > "$here/ab$n.jsonl"
done
