#!/usr/bin/env bash
# wide-h4.sh - handoff_ns 4 ms against the default (1 ms) on issue 11's whole mutex matrix, through
# scripts/mutex-ab (5 interleaved repeats of 0.2 s per cell, one driver, the policy from the
# environment). Run from the repository root after `make build-ab` (or any build with the lab); about
# 9 minutes on 2 CPUs; nothing else should run. Writes wide-h4.jsonl, wide-h4-table.txt and
# wide-h4-jain.txt here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
drv=${DRIVER:-$repo/build-ab/locklab-bench}
[ -x "$drv" ] || { echo "wide-h4.sh: $drv missing (DRIVER=path/to/locklab-bench)" >&2; exit 2; }
LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236} "$repo/.venv/bin/python" "$repo/scripts/mutex-ab" \
	--variant lk_mutex="$drv":lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=1000000 \
	--variant lk_mutex_h4ms="$drv":lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=4000000 \
	--threads 1,2,3,4,8,16,32,64,256 --cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 \
	--repeat 5 --duration 0.2 --out "$here/wide-h4.jsonl" > /dev/null
python3 - "$here" <<'PY'
import json, os, statistics, sys
from collections import defaultdict
here = sys.argv[1]
recs = os.path.join(here, "wide-h4-records.jsonl")
jain = defaultdict(lambda: defaultdict(list))
with open(os.path.join(here, "wide-h4.jsonl")) as f, open(recs, "w") as o:
    for line in f:
        d = json.loads(line)
        r = d["record"]
        r["lock"] = r["params"]["lock"] = d["variant"]   # ab-table compares locks of one file
        o.write(json.dumps(r) + "\n")
        c = d["cell"]
        jain[(c["threads"], c["cs_ns"], c["parallel_ratio"])][d["variant"]].append(r["result"]["fairness_jain"])
with open(os.path.join(here, "wide-h4-jain.txt"), "w") as o:
    o.write("cell (threads/cs-ns/ratio): Jain median, 1 ms -> 4 ms, where 4 ms is 0.03 or more lower\n")
    worse = better = 0
    for k in sorted(jain):
        a, b = statistics.median(jain[k]["lk_mutex"]), statistics.median(jain[k]["lk_mutex_h4ms"])
        worse += b <= a - 0.03
        better += b >= a + 0.03
        if b <= a - 0.03:
            o.write(f"{k[0]}/{k[1]}/{k[2]}: {a:.3f} -> {b:.3f}\n")
    o.write(f"lower in {worse} of {len(jain)} cells, higher in {better}\n")
PY
"$repo/.venv/bin/python" "$repo/scripts/ab-table" --control lk_mutex --candidates lk_mutex_h4ms \
	"$here/wide-h4-records.jsonl" > "$here/wide-h4-table.txt"
rm -f "$here/wide-h4-records.jsonl"
tail -1 "$here/wide-h4-jain.txt"
