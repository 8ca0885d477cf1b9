#!/bin/sh
# docs/results/park-grow-2core/run.sh - one growth of the parking lot's table, N -> 2N buckets,
# single-threaded, 15 fresh processes per stage (a table never shrinks):
#   1. from outside (grow.c, the library as built): lk_park_reserve(2N) against allocating and
#      clearing a table of that size alone;
#   2. from inside (hold.c, a copy of src/park.c with instrument.patch): how long grow() holds the
#      old buckets, from its first lock to its last unlock.
# Prints per N the median and best of each. Needs `make build`. Under a minute.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -std=c11 -I"$root/include" "$here/grow.c" "$root/build/liblocklab.a" -lpthread -o "$tmp/grow"
mkdir -p "$tmp/src"
cp "$root/src/park.c" "$root/src/park_impl.h" "$root/src/park_internal.h" "$tmp/src/"
(cd "$tmp" && patch -s -p1 < "$here/instrument.patch")
cc -O2 -std=c11 -D_GNU_SOURCE -I"$tmp/src" -I"$root/src" -I"$root/include" -c "$tmp/src/park.c" -o "$tmp/park.o"
cc -O2 -std=c11 -I"$root/include" "$here/hold.c" "$tmp/park.o" "$root/build/liblocklab.a" -lpthread -o "$tmp/hold"
for i in $(seq 15); do "$tmp/grow"; done > "$tmp/outside"
for i in $(seq 15); do "$tmp/hold"; done > "$tmp/inside"
python3 - "$tmp/outside" "$tmp/inside" <<'PY'
import statistics, sys
out, ins = {}, {}
for line in open(sys.argv[1]):
    n, g, a = line.split()
    out.setdefault(int(n), []).append((float(g), float(a)))
for line in open(sys.argv[2]):
    n, h = line.split()
    ins.setdefault(int(n), []).append(float(h))
print("old buckets | growth N -> 2N, median (best) us | allocation + clearing alone, median (best) us | old buckets held (inside), median (best) us | held, ns per old bucket (median)")
print("---:|---:|---:|---:|---:")
for n in sorted(out):
    g = [x for x, _ in out[n]]
    a = [y for _, y in out[n]]
    h = ins.get(n, [float("nan")])
    print(f"{n} | {statistics.median(g):.1f} ({min(g):.1f}) | {statistics.median(a):.1f} ({min(a):.1f}) | "
          f"{statistics.median(h):.1f} ({min(h):.1f}) | {statistics.median(h) * 1000 / n:.1f}")
PY
