#!/usr/bin/env bash
# run.sh - spinning without S while nobody is parked (light-spin.patch, an EXPERIMENT on 2412fa7,
# not landed): lk_mutex against the patch in two forms and rust_parking_lot, on both CPUs.
#
#   docs/results/issue11-light-spin-2core/run.sh [ab] [l4] [batch] [l5] [lbo] [counters] [lstart] [wide]
#   (default: all; about 30 minutes)
#
# The patch is built in a scratch worktree, /tmp/locklab-light. LKM_PROTO_LIGHT picks the form:
# 2 = one unmarked spinner per side-table slot (the slot's flag), others claim S as before;
# 3 = one unmarked spinner per mutex (the slot records its address), others park while it spins;
# 4 = as 3, but a waiter that finds the mutex's unmarked spinner marks the slot "a third thread"
# for the next 256 slow-path entries, during which nobody spins unmarked (others claim S);
# 5 = as 3, but a waiter that finds the mutex's unmarked spinner asks it (a flag in the slot) to
# claim S, waits until it has, and then parks behind it as behind any S holder.
# LKM_PROTO_LBO sets the unmarked spinner's longest backoff between two looks (default 16 relaxes),
# LKM_PROTO_LSTART its first one (default 1 relax).
# ab: main, 2, 3 and rust_parking_lot at 2-32 threads x 1, 100 and 2000 ns x 0 and 1x outside
# work (ab.jsonl, ab.txt). l4: main, 3, 4 and rust_parking_lot at 2-8 threads x 1 and 100 ns
# (l4.txt). batch: main, 3, 4 and rust_parking_lot, fixed work (mutex-batch, 300k critical sections
# of 1 ns) at 2, 4 and 32 threads (batch.txt). l5: main, 3, 5 and rust_parking_lot at 2-8 threads
# x 1 and 100 ns (l5.txt). lbo: form 3 with a longest backoff of 16, 64 and 256 relaxes (lbo.txt).
# counters: the statistics builds at 3 threads / 1 ns, events per acquisition (counters.txt).
# lstart: form 3 with a longest backoff of 64 and a first one of 1, 16 and 64 relaxes, at 2-4
# threads / 1 ns (lstart.txt). wide: main, form 3 with backoff 64 from a first one of 64 ("lsd"),
# and rust_parking_lot on issue 11's whole matrix, 108 cells (wide.jsonl, wide.txt).
# 5 interleaved repeats of 0.3 s (scripts/mutex-ab), the wide matrix's busy-loop
# calibration.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/issue11-light-spin-2core
wt=$(scripts/patched-tree 2412fa7 "$out/light-spin.patch" /tmp/locklab-light)
for d in . "$wt"; do
	cmake -S "$d" -B "$d/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$d/build" --target locklab-bench >/dev/null
done
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
L=$wt/build/locklab-bench:lk_mutex:LKM_PROTO_LIGHT	# a variant's BINARY:LOCK:VAR, its value to follow
ab() {	# ab FILE ARGS...: main, ARGS' variants and cells, then rust_parking_lot; 5 interleaved repeats
	local file=$1
	shift
	$py scripts/mutex-ab --variant main=build/locklab-bench:lk_mutex "$@" \
		--variant pl=build/locklab-bench:rust_parking_lot --repeat 5 --duration 0.3 --warmup 0.05 |
		tee "$out/$file"
}
for stage in ${*:-ab l4 batch l5 lbo counters lstart wide}; do
	case $stage in
	ab) ab ab.txt --variant l2=$L=2 --variant l3=$L=3 --threads 2,3,4,8,32 --cs-ns 1,100,2000 \
		--parallel-ratio 0,1 --out "$out/ab.jsonl" ;;
	l4) ab l4.txt --variant l3=$L=3 --variant l4=$L=4 --threads 2,3,4,8 --cs-ns 1,100 --parallel-ratio 0 ;;
	batch) ab batch.txt --workload mutex-batch --variant l3=$L=3 --variant l4=$L=4 --threads 2,4,32 \
		--cs-ns 1 --total-ops 300000 ;;
	l5) ab l5.txt --variant l3=$L=3 --variant l5=$L=5 --threads 2,3,4,8 --cs-ns 1,100 --parallel-ratio 0 ;;
	lbo) ab lbo.txt --variant l3=$L=3 --variant l3b64=$L=3,LKM_PROTO_LBO=64 \
		--variant l3b256=$L=3,LKM_PROTO_LBO=256 --threads 2,3,4,8 --cs-ns 1,100 --parallel-ratio 0 ;;
	counters)
		for d in . "$wt"; do
			cmake -S "$d" -B "$d/build-stats" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON >/dev/null
			cmake --build "$d/build-stats" --target locklab-bench >/dev/null
		done
		for v in main 3 5; do
			b=$wt/build-stats/locklab-bench
			[ $v = main ] && b=build-stats/locklab-bench
			LKM_PROTO_LIGHT=$v $b mutex --lock lk_mutex --threads 3 --cs-ns 1 --duration 0.5 --warmup 0.05 |
				$py -c 'import json, sys; s = json.load(sys.stdin)["result"]["lock_stats"]; o = s["ops"]; print(sys.argv[1], "ops %.1fM" % (o / 1e6), " ".join("%s=%.2e" % (k[6:], v / o) for k, v in s.items() if k.startswith("mutex") and v))' "form $v"
		done | tee "$out/counters.txt" ;;
	lstart) ab lstart.txt --variant b64=$L=3,LKM_PROTO_LBO=64 \
		--variant b64s16=$L=3,LKM_PROTO_LBO=64,LKM_PROTO_LSTART=16 \
		--variant b64s64=$L=3,LKM_PROTO_LBO=64,LKM_PROTO_LSTART=64 --threads 2,3,4 --cs-ns 1 --parallel-ratio 0,1 ;;
	wide)
		ab wide.txt --variant lsd=$L=3,LKM_PROTO_LBO=64,LKM_PROTO_LSTART=64 --threads 1,2,3,4,8,16,32,64,256 \
			--cs-ns 1,100,2000 --parallel-ratio 0,1,10,100 --out "$out/wide.jsonl"
		$py "$out/wide-table.py" "$out/wide.jsonl" | tee "$out/wide-table.txt" ;;
	*) echo "run.sh: unknown stage '$stage' (expected ab, l4, batch, l5, lbo, counters, lstart or wide)" >&2; exit 2 ;;
	esac
done
