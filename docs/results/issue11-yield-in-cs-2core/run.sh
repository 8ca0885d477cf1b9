#!/usr/bin/env bash
# run.sh - stress-ng's mutex loop (a sched_yield() inside the lock, two processes of two threads) on
# lk_mutex with several handoff_ns, and on the peers, through the LD_PRELOAD shim. Run from the
# repository root after `make build`; nothing else should run. Writes STAGE.txt (every run) and
# STAGE.summary.txt (medians) here, counters.txt for the counters stage.
#
#   docs/results/issue11-yield-in-cs-2core/run.sh [yieldcs0] [yieldcs1] [yieldcs2] [stressng] [counters]
#
# yieldcsN: yieldcs.c, MODE N (see there; 2 needs root), 2 processes x 2 threads, 2 s, 5 rounds.
# stressng: `stress-ng --mutex 2 -t 3` (its bogo ops/s, real time), 5 rounds; as root its threads
#           switch to SCHED_FIFO, as in docs/results/advise.md.
# counters: yieldcs MODE 0 (3 s, 2 processes) on a shim built with counters.patch (process-wide
#           slow-path counters printed each second; needs git, cmake, ninja), per handoff_ns.
# Each round runs every variant once, in a shuffled order.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
shim="$repo/build/liblocklab-preload.so"
[ -f "$shim" ] || { echo "run.sh: $shim missing: run 'make build' first" >&2; exit 2; }
bin="$(mktemp -d)/yieldcs"
cc -O2 -Wall -Wextra -pthread -o "$bin" "$here/yieldcs.c"
rounds=${ROUNDS:-5}

# NAME LOCKLAB_LOCK LOCKLAB_MUTEX_HANDOFF_NS ("-": not set). lk_mutex's handoff_ns is always given,
# so each name means the same value whatever the library's default is.
variants=(
	"glibc glibc -"
	"futex3 futex3 -"
	"rust_parking_lot rust_parking_lot -"
	"lk_mutex_h0 lk_mutex 0"
	"lk_mutex_h1ms lk_mutex 1000000"
	"lk_mutex_h2ms lk_mutex 2000000"
	"lk_mutex_h4ms lk_mutex 4000000"
	"lk_mutex_h10ms lk_mutex 10000000"
	"lk_mutex_h50ms lk_mutex 50000000"
)

run_stage() {
	local stage=$1 out="$here/$1.txt"
	echo "# $stage: $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD), $(nproc) CPUs, $rounds rounds" > "$out"
	for r in $(seq "$rounds"); do
		while read -r name lock h; do
			local envs=(LD_PRELOAD="$shim" LOCKLAB_LOCK="$lock") v
			[ "$h" = - ] || envs+=(LOCKLAB_MUTEX_HANDOFF_NS="$h")
			case $stage in
			yieldcs[012])
				local m=${stage#yieldcs} t1 t2
				t1=$(mktemp); t2=$(mktemp)
				env "${envs[@]}" "$bin" 2 "$m" 2 > "$t1" &
				env "${envs[@]}" "$bin" 2 "$m" 2 > "$t2"
				wait
				v=$(cat "$t1" "$t2" | awk '{s += $1} END {printf "%d", s}')
				rm -f "$t1" "$t2"
				;;
			stressng)
				v=$(env "${envs[@]}" stress-ng --mutex 2 -t 3 --metrics-brief 2>&1 |
					awk '/ mutex +[0-9]+ +[0-9.]+ / {printf "%d", $9; exit}')
				;;
			*) echo "run.sh: unknown stage '$stage'" >&2; exit 2 ;;
			esac
			echo "$r $name $v" >> "$out"
		done < <(printf '%s\n' "${variants[@]}" | shuf)
	done
	python3 - "$out" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#")]
by = {}
for _, name, v in rows:
    by.setdefault(name, []).append(int(v))
g = statistics.median(by["glibc"])
print(f"{'variant':18} {'median':>9} {'min':>9} {'max':>9}  vs glibc")
for name, vs in sorted(by.items(), key=lambda kv: -statistics.median(kv[1])):
    m = statistics.median(vs)
    print(f"{name:18} {m:9.0f} {min(vs):9d} {max(vs):9d}  {m / g:.2f}x")
PY
}

counters() {	# the slow-path counters per handoff_ns: a scratch build of the shim with counters.patch
	local wt out="$here/counters.txt"
	wt="$(mktemp -d)/wt"
	git -C "$repo" worktree add -q --detach "$wt" HEAD
	git -C "$wt" apply "$here/counters.patch"
	cmake -S "$wt" -B "$wt/b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
	ninja -C "$wt/b" locklab-preload > /dev/null
	echo "# counters: $(date -u +%FT%TZ), commit $(git -C "$repo" rev-parse --short HEAD) + counters.patch" > "$out"
	echo "# per process, cumulative at each second; then each process's line: ops/s, fewest, most" >> "$out"
	for h in 1000000 2000000 4000000 0 50000000; do
		echo "== handoff_ns $h" >> "$out"
		for p in 1 2; do
			LKS_REPORT=1 LOCKLAB_MUTEX_HANDOFF_NS=$h LD_PRELOAD="$wt/b/liblocklab-preload.so" \
				"$bin" 2 0 3 >> "$out" 2>&1 &
		done
		wait
	done
	git -C "$repo" worktree remove --force "$wt"
	grep -v ' park 0 ' "$out"
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(yieldcs0 yieldcs1 yieldcs2 stressng counters)
for s in "${stages[@]}"; do
	case $s in
	yieldcs[012]|stressng|counters) ;;
	*) echo "run.sh: unknown stage '$s' (yieldcs0 yieldcs1 yieldcs2 stressng counters)" >&2; exit 2 ;;
	esac
done
for s in "${stages[@]}"; do
	echo "== $s"
	if [ "$s" = counters ]; then
		counters
	else
		run_stage "$s" | tee "$here/$s.summary.txt"
	fi
done
