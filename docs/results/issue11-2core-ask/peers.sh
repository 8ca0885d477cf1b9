#!/usr/bin/env bash
# peers.sh - the 2-thread cells of the wide matrix, lk_mutex with the ask off (the default) and on
# (LOCKLAB_MUTEX_ASK=1) beside the blocking peers that lead there, interleaved by scripts/mutex-ab,
# 5 repeats. Writes peers.jsonl and peers.txt next to this script; read them with
#   scripts/ab-table --thread-p99 --control glibc_adaptive --candidates ask,off,futex3,rust_parking_lot,absl_mutex peers.jsonl
# About 3 minutes on the 2-vCPU guest (make build first). Run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build/locklab-bench}
[ -x "$D" ] || { echo "peers.sh: $D is not built (make build, or set LOCKLAB_BENCH)" >&2; exit 2; }
v=(--variant "ask=$D:lk_mutex:LOCKLAB_MUTEX_ASK=1" --variant "off=$D:lk_mutex")
for p in glibc_adaptive glibc_normal futex3 rust_parking_lot rust_std absl_mutex; do
	v+=(--variant "$p=$D:$p")
done
"$root/scripts/mutex-ab" "${v[@]}" --threads 2 --cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 \
	--repeat 5 --out "$here/peers.jsonl" > "$here/peers.txt"
