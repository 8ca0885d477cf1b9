#!/usr/bin/env bash
# run.sh - 256 threads / 100 ns / 100x on 2 CPUs: how often lk_mutex's p99 jumps to milliseconds,
# against the peers and the screen variants of screen.patch (applied to the tree for the build, then
# reverted): handoff_ns raised, the yields off or cut, extra wakes beside a stale S or W. 12
# interleaved repeats of 0.5 s per lock (scripts/mutex-ab). Writes screen.jsonl, screen.txt and
# count.txt (count.py) next to this script. About 4 minutes on the 2-vCPU guest, build included.
# Run it alone, from a clean tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"
git apply "$here/screen.patch"
trap 'git apply -R "$here/screen.patch"' EXIT	# (also deletes the variant files it added)
cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
cmake --build build-ab >/dev/null
D=build-ab/locklab-bench
v=(--variant "base=$D:lk_mutex_v_base")
for h in 5000000:h5ms 20000000:h20ms 10000000000:h10s; do
	v+=(--variant "${h#*:}=$D:lk_mutex_v_base:LOCKLAB_MUTEX_HANDOFF_NS=${h%%:*}")
done
for l in noyield nowaityield noyields yl100 yl1m wyc16 wms8 wms8f; do
	v+=(--variant "$l=$D:lk_mutex_v_$l")
done
for p in futex3 rust_parking_lot glibc_normal; do
	v+=(--variant "$p=$D:$p")
done
scripts/mutex-ab "${v[@]}" --threads 256 --cs-ns 100 --parallel-ratio 100 --duration 0.5 \
	--repeat 12 --out "$here/screen.jsonl" > "$here/screen.txt"
python3 "$here/count.py" "$here/screen.jsonl" > "$here/count.txt"
cat "$here/count.txt"
