#!/usr/bin/env bash
# spin-counters.sh - where lk_mutex's slow mode spends its time in the lab's yield-in-lock cell
# (4 threads, 2 locks, `--cs-yield 1`, 1 ns critical sections: stress-ng's shape). A scratch
# statistics build with spin-counters.patch (how many relax rounds each spin ran, its budget, the
# spinner's and waiters' yields), in a git worktree of HEAD; the lab's own counters and
# getrusage() do the rest. Built on 55d7d31, the commit it was measured on, in a scratch worktree
# (scripts/patched-tree). Run from the repository root; nothing else should run; needs git, cmake.
# Writes spin-counters.txt here (about 2 minutes). Since a2c5523 a statistics build counts the spin
# time and the spinner's yields itself (mutex_spin_ns_lost, mutex_spin_yield).
#
# Each round runs lk_mutex at spin_min_ns 1000 (the default), 250 and 0 (LOCKLAB_MUTEX_SPIN_MIN_NS),
# then rust_parking_lot and glibc_normal, 1.5 s each.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
rounds=${ROUNDS:-6}
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
wt="$(mktemp -d)/wt"
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
"$repo/scripts/patched-tree" 55d7d31 "$here/spin-counters.patch" "$wt" > /dev/null
cmake -S "$wt" -B "$wt/b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON > /dev/null
cmake --build "$wt/b" -j "$(nproc)" --target locklab-bench > /dev/null
out="$here/spin-counters.txt"
{
	echo "# spin-counters: $(date -u +%FT%TZ), 55d7d31 + spin-counters.patch, $(nproc) CPUs"
	echo "# locklab-bench mutex --threads 4 --groups 2 --cs-yield 1 --cs-ns 1 --duration 1.5 --warmup 0.2"
	echo "# per op: user and system CPU ns, voluntary (park) and involuntary (yield, preemption) context"
	echo "# switches; lk_mutex's counters: spins begun and won, relax rounds of a failed spin, its budget"
	echo "# in rounds, spinner yields, waiter yields, parks"
} > "$out"
for r in $(seq "$rounds"); do
	for v in lk_mutex:1000 lk_mutex:250 lk_mutex:0 rust_parking_lot:- glibc_normal:-; do
		lock=${v%%:*} smin=${v#*:}
		envs=()
		[ "$smin" = - ] || envs=(LOCKLAB_MUTEX_SPIN_MIN_NS="$smin")
		env "${envs[@]}" "$wt/b/locklab-bench" mutex --lock "$lock" --threads 4 --groups 2 --cs-yield 1 \
			--cs-ns 1 --duration 1.5 --warmup 0.2 |
		python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]; n = r["total_ops"]; ls = r.get("lock_stats", {})
line = "%-16s %-5s %.3fM ops/s  user %4d sys %4d  vcsw %.3f ivcsw %.3f" % (sys.argv[1], sys.argv[2],
    r["ops_per_sec"] / 1e6, r["cpu_user_s"] / n * 1e9, r["cpu_sys_s"] / n * 1e9, r["nvcsw"] / n, r["nivcsw"] / n)
if ls.get("enabled"):
    st, ss = ls["mutex_spin_start"], ls["mutex_spin_success"]
    line += "  spins %.3f won %.4f  rounds/failed %3.0f budget %3.0f  syield %.3f wyield %.3f park %.3f" % (
        st / n, ss / n, ls["scratch_rounds_fail"] / max(st - ss, 1), ls["scratch_budget"] / max(st, 1),
        ls["scratch_spin_yields"] / n, ls["scratch_wait_yields"] / n, ls["mutex_park"] / n)
print(line)' "$lock" "$smin" >> "$out"
	done
done
sort -s -k1,2 "$out" | grep -v '^#'
