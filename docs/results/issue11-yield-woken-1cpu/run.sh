#!/usr/bin/env bash
# run.sh - the one-CPU yield to the woken waiter (d176f2a, reverted in 72f0762): what it bought on
# one pinned CPU, what the hostile review found it cost, and why 32 threads gained nothing.
#
#   docs/results/issue11-yield-woken-1cpu/run.sh [ab1cpu] [ab2cpu] [bound] [review] [census]   (default: all)
#
# "before" is f7405ef and "after" d176f2a, each built (normal and statistics builds) in a scratch
# worktree, /tmp/locklab-before and /tmp/locklab-after.
#   ab1cpu  before, after, futex3, rust_parking_lot and glibc_normal under `taskset -c 0`, 2-32
#           threads x 1 and 100 ns x 0 and 1x outside work, 5 interleaved repeats of 0.3 s
#           (scripts/mutex-ab; ab1cpu.jsonl).
#   ab2cpu  before and after on both CPUs, where nothing should change (ab2cpu.jsonl).
#   bound   tests/test_mutex_many_waiters (48 threads, waits far past handoff_ns) pinned, before
#           and after, 3 runs each (bound.txt).
#   review  the review's reproducers (repro/), built against both statistics builds, pinned:
#           fairness at 8 threads / 1 us, a condvar queue (1 producer, 8 consumers, capacity 1),
#           SCHED_FIFO unlock latency (needs root or CAP_SYS_NICE), and on both CPUs a
#           thread-per-core program whose pinned main thread contends first (review.txt).
#   census  why 32 threads gain nothing: census-and-yields.patch (an EXPERIMENT, never to land)
#           on d176f2a counts, per failed first CAS of the inline unlock, which bits were in the
#           word (LKM_PROTO_DUMP=1) and lets a waiter on one CPU yield LKM_PROTO_YIELDS times before
#           it parks; pinned, at 8 and 32 threads, then 0, 3 and 8 yields against futex3 (census.txt).
# Every mutex-ab run uses the wide matrix's busy-loop calibration.
set -euo pipefail
cd "$(dirname "$0")/../../.."
stages=${*:-ab1cpu ab2cpu bound review census}
out=$PWD/docs/results/issue11-yield-woken-1cpu
export LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
tree() {	# tree DIR COMMIT [PATCH]: a worktree with normal and statistics builds
	local d=$1
	if [ -n "${3:-}" ]; then
		scripts/patched-tree "$2" "$3" "$d" >/dev/null
	elif [ ! -d "$d" ]; then
		git worktree add -q --detach "$d" "$2"
	fi
	cmake -S "$d" -B "$d/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$d/build" --target locklab-bench test_mutex_many_waiters locklab_static >/dev/null
	cmake -S "$d" -B "$d/build-stats" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON >/dev/null
	cmake --build "$d/build-stats" --target locklab_static >/dev/null
}
before=/tmp/locklab-before after=/tmp/locklab-after
tree $before f7405ef
tree $after d176f2a
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target locklab-bench >/dev/null
for stage in $stages; do
	case $stage in
	ab1cpu)
		taskset -c 0 $py scripts/mutex-ab --variant before="$before/build/locklab-bench:lk_mutex" \
			--variant after="$after/build/locklab-bench:lk_mutex" \
			--variant futex3=build/locklab-bench:futex3 \
			--variant pl=build/locklab-bench:rust_parking_lot \
			--variant glibc=build/locklab-bench:glibc_normal \
			--threads 2,4,8,32 --cs-ns 1,100 --parallel-ratio 0,1 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/ab1cpu.jsonl" ;;
	ab2cpu)
		$py scripts/mutex-ab --variant before="$before/build/locklab-bench:lk_mutex" \
			--variant after="$after/build/locklab-bench:lk_mutex" \
			--threads 2,8,32 --cs-ns 1,100 --parallel-ratio 0 --repeat 5 \
			--duration 0.3 --warmup 0.05 --out "$out/ab2cpu.jsonl" ;;
	bound)
		for i in 1 2 3; do
			for b in $before $after; do
				echo "== $b run $i"
				taskset -c 0 "$b/build/test_mutex_many_waiters" 2>&1 | tail -4
			done
		done | tee "$out/bound.txt" ;;
	review)
		bin=/tmp/locklab-yield-review
		mkdir -p $bin
		for p in fair1cpu cond_queue fifo_yield percpu_main_first; do
			gcc -O2 -std=gnu11 -DSTATS -DNO_YW -I$before/include -I$before/src "$out/repro/$p.c" \
				$before/build-stats/liblocklab.a -lpthread -o $bin/${p}_before
			gcc -O2 -std=gnu11 -DSTATS -I$after/include -I$after/src "$out/repro/$p.c" \
				$after/build-stats/liblocklab.a -lpthread -o $bin/${p}_after
		done
		{
			for b in before after; do
				echo "== fairness, 8 threads / 1000 ns / 0.5 s, pinned: $b"
				taskset -c 0 $bin/fair1cpu_$b 8 1000 0.5 | tail -1
			done
			for i in 1 2 3; do
				for b in before after; do
					echo "== condvar queue 1 producer / 8 consumers / capacity 1, pinned: $b"
					taskset -c 0 $bin/cond_queue_$b 1 8 1 0.5
				done
			done
			for b in before after; do
				echo "== SCHED_FIFO unlock-to-done latency, 3 s, pinned: $b"
				taskset -c 0 $bin/fifo_yield_$b 3 || echo "(needs root or CAP_SYS_NICE)"
			done
			for i in 1 2 3; do
				for b in before after; do
					echo "== thread-per-core, main (pinned to CPU 0) contends first, both CPUs: $b"
					$bin/percpu_main_first_$b main 200 200 1
				done
			done
		} 2>&1 | tee "$out/review.txt" ;;
	census)
		c=/tmp/locklab-census
		tree $c d176f2a "$out/census-and-yields.patch"
		{
			for t in 8 32; do
				echo "== $t threads / 1 ns, one pinned CPU: the word when the inline unlock's first CAS failed"
				LKM_PROTO_DUMP=1 LKM_PROTO_YIELDS=0 taskset -c 0 "$c/build/locklab-bench" mutex \
					--lock lk_mutex --threads $t --cs-ns 1 --duration 0.5 --warmup 0.05 2>&1 >/dev/null
			done
			taskset -c 0 $py scripts/mutex-ab --variant y0="$c/build/locklab-bench:lk_mutex:LKM_PROTO_YIELDS=0" \
				--variant y3="$c/build/locklab-bench:lk_mutex:LKM_PROTO_YIELDS=3" \
				--variant y8="$c/build/locklab-bench:lk_mutex:LKM_PROTO_YIELDS=8" \
				--variant futex3=build/locklab-bench:futex3 \
				--threads 4,8,32 --cs-ns 1,100 --parallel-ratio 0 --repeat 5 --duration 0.3 --warmup 0.05
		} 2>&1 | tee "$out/census.txt" ;;
	*) echo "run.sh: unknown stage '$stage' (expected ab1cpu, ab2cpu, bound, review or census)" >&2; exit 2 ;;
	esac
done
