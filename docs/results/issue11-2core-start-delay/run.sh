#!/usr/bin/env bash
# run.sh - the spinner's first look delayed (lab variants lk_mutex_v_sd1, lk_mutex_v_sd4) against
# the control (lk_mutex_v_base) and the blocking peers that lead at 2-4 threads, interleaved by
# scripts/mutex-ab, 5 repeats. Needs the A/B build:
#   cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS
#   cmake --build build-ab
# Writes sd.jsonl and sd.txt next to this script; read them with
#   scripts/ab-table --control base --candidates sd1,sd4,futex3,glibc_normal,rust_parking_lot,absl_mutex sd.jsonl
# About 9 minutes on the 2-vCPU guest. Run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
D=${LOCKLAB_BENCH:-$root/build-ab/locklab-bench}
[ -x "$D" ] || { echo "run.sh: $D is not built (see the top of this script, or set LOCKLAB_BENCH)" >&2; exit 2; }
v=(--variant "base=$D:lk_mutex_v_base" --variant "sd1=$D:lk_mutex_v_sd1" --variant "sd4=$D:lk_mutex_v_sd4")
for p in glibc_normal futex3 rust_parking_lot absl_mutex; do
	v+=(--variant "$p=$D:$p")
done
"$root/scripts/mutex-ab" "${v[@]}" --threads 2,3,4 --cs-ns 1,100,2000 --parallel-ratio 0,1,10 \
	--repeat 5 --out "$here/sd.jsonl" > "$here/sd.txt"
