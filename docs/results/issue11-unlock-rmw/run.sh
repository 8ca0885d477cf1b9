#!/usr/bin/env bash
# run.sh - the unlock's second RMW: lk_mutex against a one-RMW unlock (unlock-1rmw.patch, an
# EXPERIMENT that breaks the owed bound, never to be landed as it is) and the peers, on both CPUs
# and on one pinned CPU.
#
#   docs/results/issue11-unlock-rmw/run.sh [ab2cpu] [ab1cpu] [perf] [batch] [onecpu] [yield]   (default: all)
#
# The patched driver is built in a scratch worktree, /tmp/locklab-unlock-rmw. ab2cpu: lk_mutex,
# the patched lk_mutex and rust_parking_lot at 1-32 threads x 1 and 100 ns x 0 and 1x outside,
# 5 interleaved repeats (scripts/mutex-ab). ab1cpu: the same with futex3, at 2-8 threads and no
# outside work, under `taskset -c 0`. perf: where lk_mutex's time goes at 8 threads / 1 ns on one
# CPU (perf record / annotate of lkm_unlock; needs perf). batch: the fixed-work cell 32 threads /
# 1 ns / 300k critical sections, lk_mutex and rust_parking_lot, 5 runs each, alternating, on one
# pinned CPU and on both (batch.txt). onecpu: one-cpu.patch (no spinning and no W on one CPU)
# built in /tmp/locklab-one-cpu, against 548eddf's lk_mutex, futex3 and rust_parking_lot, pinned
# (onecpu.jsonl). yield: yield-to-woken.patch (no spinning on one CPU, and an unlock that woke a
# waiter with W yields once) built in /tmp/locklab-yield, against lk_mutex and futex3, pinned
# (yield1cpu.jsonl). Every run uses the wide matrix's busy-loop calibration.
set -euo pipefail
cd "$(dirname "$0")/../../.."
stages=${*:-ab2cpu ab1cpu perf batch onecpu yield}
out=docs/results/issue11-unlock-rmw
wt=/tmp/locklab-unlock-rmw
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target locklab-bench >/dev/null
if [ ! -x "$wt/build/locklab-bench" ]; then
	rm -rf "$wt"
	git worktree add -q --detach "$wt" HEAD
	git -C "$wt" apply "$PWD/$out/unlock-1rmw.patch"
	cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$wt/build" --target locklab-bench >/dev/null
fi
for stage in $stages; do
	case $stage in
	ab2cpu)
		$py scripts/mutex-ab --variant main=build/locklab-bench:lk_mutex \
			--variant rmw1="$wt/build/locklab-bench:lk_mutex" \
			--variant pl=build/locklab-bench:rust_parking_lot \
			--threads 1,2,3,8,32 --cs-ns 1,100 --parallel-ratio 0,1 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/ab2cpu.jsonl" ;;
	ab1cpu)
		taskset -c 0 $py scripts/mutex-ab --variant main=build/locklab-bench:lk_mutex \
			--variant rmw1="$wt/build/locklab-bench:lk_mutex" \
			--variant pl=build/locklab-bench:rust_parking_lot \
			--variant futex3=build/locklab-bench:futex3 \
			--threads 2,4,8 --cs-ns 1,100 --parallel-ratio 0 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/ab1cpu.jsonl" ;;
	perf)
		perf record -q -o /tmp/unlock-rmw.perf -- taskset -c 0 build/locklab-bench mutex \
			--lock lk_mutex --threads 8 --cs-ns 1 --duration 1 --warmup 0.05 >/dev/null
		perf report -i /tmp/unlock-rmw.perf --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -6
		perf annotate -i /tmp/unlock-rmw.perf --stdio -s lkm_unlock 2>/dev/null ;;
	batch)
		for cpus in 0 0,1; do
			for i in 1 2 3 4 5; do
				for lk in lk_mutex rust_parking_lot; do
					taskset -c $cpus build/locklab-bench mutex-batch --lock $lk --threads 32 \
						--total-ops 300000 --cs-ns 1 |
						$py -c 'import json, sys; r = json.load(sys.stdin)["result"]; print(sys.argv[1], sys.argv[2], "finish_ms %.2f cpu_ns_per_op %.0f start_skew_ms %.2f" % (r["finish_s"] * 1e3, r["cpu_ns_per_op"], r["start_skew_s"] * 1e3))' "cpus=$cpus" "$lk"
				done
			done
		done | tee "$out/batch.txt" ;;
	onecpu)
		one=/tmp/locklab-one-cpu base=/tmp/locklab-one-cpu-base
		for d in "$one" "$base"; do
			if [ ! -x "$d/build/locklab-bench" ]; then
				rm -rf "$d"
				git worktree add -q --detach "$d" 548eddf
				[ "$d" = "$base" ] || git -C "$d" apply "$PWD/$out/one-cpu.patch"
				cmake -S "$d" -B "$d/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
				cmake --build "$d/build" --target locklab-bench >/dev/null
			fi
		done
		taskset -c 0 $py scripts/mutex-ab --variant before="$base/build/locklab-bench:lk_mutex" \
			--variant after="$one/build/locklab-bench:lk_mutex" \
			--variant futex3=build/locklab-bench:futex3 \
			--variant pl=build/locklab-bench:rust_parking_lot \
			--threads 2,4,8,32 --cs-ns 1,100 --parallel-ratio 0,1 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/onecpu.jsonl" ;;
	yield)
		y=/tmp/locklab-yield
		if [ ! -x "$y/build/locklab-bench" ]; then
			rm -rf "$y"
			git worktree add -q --detach "$y" aea2243
			git -C "$y" apply "$PWD/$out/yield-to-woken.patch"
			cmake -S "$y" -B "$y/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
			cmake --build "$y/build" --target locklab-bench test_mutex_many_waiters >/dev/null
		fi
		taskset -c 0 $py scripts/mutex-ab --variant main=build/locklab-bench:lk_mutex \
			--variant yield="$y/build/locklab-bench:lk_mutex" \
			--variant futex3=build/locklab-bench:futex3 \
			--threads 4,8,32 --cs-ns 1,100 --parallel-ratio 0 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/yield1cpu.jsonl"
		taskset -c 0 "$y/build/test_mutex_many_waiters" ;;
	*) echo "run.sh: unknown stage '$stage' (expected ab2cpu, ab1cpu, perf, batch, onecpu or yield)" >&2; exit 2 ;;
	esac
done
