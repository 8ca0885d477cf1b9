#!/usr/bin/env bash
# wide-h4.sh - handoff_ns 4 ms against the default (1 ms) on issue 11's whole mutex matrix, through
# scripts/mutex-ab (5 interleaved repeats of 0.2 s per cell, one driver, the policy from the
# environment), and on its fixed-work batch. Run from the repository root; nothing else should run.
# The driver is build-ab/locklab-bench (cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=RelWithDebInfo
# -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS && cmake --build build-ab --target locklab-bench) unless
# DRIVER= names another; any build with the lab will do.
#
#   docs/results/issue11-yield-in-cs-2core/wide-h4.sh [wide] [batch]
#
# wide (about 9 minutes on 2 CPUs): wide-h4.jsonl, wide-h4-table.txt, wide-h4-jain.txt here;
# batch (about 1 minute): batch-h4.jsonl, batch-h4-table.txt. OUT=PREFIX (relative to this directory
# unless absolute) writes PREFIX.jsonl etc. instead (the second wide run here is OUT=wide-h4-run2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
drv=${DRIVER:-$repo/build-ab/locklab-bench}
[ -x "$drv" ] || { echo "wide-h4.sh: $drv missing (DRIVER=path/to/locklab-bench)" >&2; exit 2; }
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
variants=(--variant lk_mutex="$drv":lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=1000000
	  --variant lk_mutex_h4ms="$drv":lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=4000000)
threads=1,2,3,4,8,16,32,64,256

prefix() {	# DEFAULT: $OUT if given (relative to this directory unless absolute), else DEFAULT here
	local p=${OUT:-$1}
	[[ $p = /* ]] || p=$here/$p
	echo "$p"
}

table() {	# PREFIX: the three metrics per cell, 4 ms against 1 ms
	"$repo/.venv/bin/python" "$repo/scripts/ab-table" --control lk_mutex --candidates lk_mutex_h4ms \
		"$1.jsonl" > "$1-table.txt"
}

wide() {
	local p
	p=$(prefix wide-h4)
	"$repo/.venv/bin/python" "$repo/scripts/mutex-ab" "${variants[@]}" --threads $threads \
		--cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 --repeat 5 --duration 0.2 \
		--out "$p.jsonl" > /dev/null
	table "$p"
	python3 - "$p" <<'PY'
import json, statistics, sys
from collections import defaultdict
p = sys.argv[1]
jain = defaultdict(lambda: defaultdict(list))
for line in open(p + ".jsonl"):
    d = json.loads(line)
    c = d["cell"]
    jain[(c["threads"], c["cs_ns"], c["parallel_ratio"])][d["variant"]].append(
        d["record"]["result"]["fairness_jain"])
with open(p + "-jain.txt", "w") as o:
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
	tail -1 "$p-jain.txt"
}

batch() {
	local p
	p=$(prefix batch-h4)
	"$repo/.venv/bin/python" "$repo/scripts/mutex-ab" --workload mutex-batch "${variants[@]}" \
		--threads $threads --cs-ns 1,100,2000 --total-ops 100000 --repeat 5 --out "$p.jsonl" > /dev/null
	table "$p"
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(wide batch)
for s in "${stages[@]}"; do
	case $s in wide|batch) ;; *) echo "wide-h4.sh: unknown stage '$s' (wide batch)" >&2; exit 2 ;; esac
done
for s in "${stages[@]}"; do
	"$s"
done
