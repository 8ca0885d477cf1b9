#!/usr/bin/env bash
# speed.sh - how steady this machine's CPU speed is: probe.c runs a fixed busy loop in chunks of
# ~0.1-0.3 ms, pinned, for 8 s on CPU 0 alone, on CPU 1 alone, then on both at once, and this
# prints per run the fastest chunk, the median, the share of chunks slower than 1.5x the fastest,
# and how long the slow and fast phases last. Nothing else should run. About 30 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O1 -o "$tmp/probe" "$here/probe.c"
"$tmp/probe" 0 8 > "$tmp/cpu0.txt"
"$tmp/probe" 1 8 > "$tmp/cpu1.txt"
"$tmp/probe" 0 8 > "$tmp/both0.txt" & "$tmp/probe" 1 8 > "$tmp/both1.txt"; wait
python3 - "$tmp" <<'PY'
import statistics, sys
print("run    chunks  fastest  median  slow share  slow phases: n, median, max ms  fast phases: median, max ms")
for f in ("cpu0", "cpu1", "both0", "both1"):
    rows = [tuple(map(float, l.split())) for l in open(f"{sys.argv[1]}/{f}.txt")]
    ts, xs = [r[0] for r in rows], [r[1] for r in rows]
    fast = min(xs)
    slow = [x > 1.5 * fast for x in xs]
    seg, start = [], ts[0]
    for i in range(1, len(xs)):
        if slow[i] != slow[i - 1]:
            seg.append((slow[i - 1], ts[i] - start))
            start = ts[i]
    seg.append((slow[-1], ts[-1] - start))
    sl = [d for s, d in seg if s] or [0]
    fa = [d for s, d in seg if not s] or [0]
    print(f"{f:6s} {len(xs):7d} {fast:6.0f}us {statistics.median(xs):5.0f}us {sum(slow) / len(xs):10.2f}"
          f"  {len(sl):5d} {statistics.median(sl):6.1f} {max(sl):6.0f}            {statistics.median(fa):6.1f} {max(fa):6.0f}")
PY
