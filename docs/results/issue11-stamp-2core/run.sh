#!/usr/bin/env bash
# run.sh - the claim of SPINNING stamped once it succeeded (issue 11, stop 26) against the stamp
# before each try of the claim (lk_mutex_v_stamppre, the design before), on this machine: about 9
# minutes on 2 CPUs. Run it alone on the machine.
#
#   docs/results/issue11-stamp-2core/run.sh [wide] [two] [p99] [counters] [grace] [window] [col100]
#                                                                         (default: all)
#
# wide: scripts/ab-wide on issue 11's whole matrix (108 cells, 5 interleaved repeats; about 6
# minutes), read with `scripts/ab-table --control lk_mutex_v_stamppre --candidates lk_mutex_v_base
# wide.json`. two: scripts/mutex-ab, both placements beside rust_parking_lot, futex3 and
# glibc_normal at 2, 3 and 4 threads x 1 and 100 ns x outside work 0, 1x, 10x, 7 repeats (about 2.5
# minutes). p99: the cell whose p99 the change raises, 2 threads / 100 ns / 1x, both placements
# beside futex3, glibc_normal and rust_parking_lot, 15 repeats (about 1 minute). counters: the
# statistics build (build-ab-stats), both placements at 2 threads / 1 ns / 0 and 10x and 2 / 100 ns /
# 1x, 5 runs of 0.3 s each, interleaved: throughput, p99, and spins started per op (a thread that
# lost the lock claimed S and spun, rather than finding it free and barging). grace: scripts/ab-wide
# again, lk_mutex (lk_mutex_v_base, which waits up to STAMP_GRACE_NS for a young claim's stamp)
# against lk_mutex_v_grace0 (no wait), about 6 minutes. window: the hostile review's reproducer
# window.c against liblocklab built at 1c0394c (stamp after the claim, no wait), at 98df693 (the
# wait) and at 634c3ee (stamp before the claim), 4 x 800 rounds each (about 30 s each, plus three
# library builds in /tmp). col100: the 1 ns / 100x cells the suite at 3114cc4 (../issue11-2core-stamp/)
# had behind at 3, 4 and 64 threads, with lk_mutex, both earlier forms and rust_parking_lot, 15
# interleaved repeats (about 1 minute).
# Needs build-ab/locklab-bench and build-ab-stats/locklab-bench (cmake -S . -B build-ab
# -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS, and the same with -DLOCKLAB_STATS=ON in build-ab-stats).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/issue11-stamp-2core
drv=build-ab/locklab-bench
sdrv=build-ab-stats/locklab-bench
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
need_drv() {
	[ -x "$drv" ] || { echo "run.sh: $drv missing (cmake -S . -B build-ab -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS)" >&2; exit 2; }
}
# the whole matrix, lk_mutex_v_base against CONTROL, into NAME.json, NAME-log.txt, NAME-table.txt
ab_wide() {
	need_drv
	scripts/ab-wide "$drv" "$out/$2.json" "$1" lk_mutex_v_base > "$out/$2-log.txt" 2>&1
	$py scripts/ab-table --control "$1" --candidates lk_mutex_v_base "$out/$2.json" > "$out/$2-table.txt"
}
for stage in ${*:-wide two p99 counters grace window col100}; do
	case $stage in
	wide) ab_wide lk_mutex_v_stamppre wide ;;
	two)
		need_drv
		$py scripts/mutex-ab --variant "after=$drv:lk_mutex_v_base" --variant "before=$drv:lk_mutex_v_stamppre" \
			--variant "rust_parking_lot=$drv:rust_parking_lot" --variant "futex3=$drv:futex3" \
			--variant "glibc_normal=$drv:glibc_normal" \
			--threads 2,3,4 --cs-ns 1,100 --parallel-ratio 0,1,10 --repeat 7 --duration 0.2 \
			--warmup 0.05 --out "$out/two.jsonl" > "$out/two.txt" ;;
	p99)
		need_drv
		$py scripts/mutex-ab --variant "after=$drv:lk_mutex_v_base" --variant "before=$drv:lk_mutex_v_stamppre" \
			--variant "futex3=$drv:futex3" --variant "glibc_normal=$drv:glibc_normal" \
			--variant "rust_parking_lot=$drv:rust_parking_lot" \
			--threads 2 --cs-ns 100 --parallel-ratio 1 --repeat 15 --duration 0.2 \
			--warmup 0.05 --out "$out/p99.jsonl" > "$out/p99.txt" ;;
	counters)
		[ -x "$sdrv" ] || { echo "run.sh: $sdrv missing (cmake -S . -B build-ab-stats -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS -DLOCKLAB_STATS=ON)" >&2; exit 2; }
		: > "$out/counters.txt"
		for cell in 1/0 1/10 100/1; do
			for i in 1 2 3 4 5; do
				for v in base stamppre; do
					"$sdrv" mutex --lock lk_mutex_v_$v --threads 2 --cs-ns ${cell%/*} \
						--parallel-ratio ${cell#*/} --duration 0.3 | $py -c '
import json, sys
r = json.load(sys.stdin)["result"]
po = r["lock_stats"]["per_op"]
print("%-20s 2/%-6s %6.2fM ops/s  p99 %5d ns  spins started/op %.4f  succeeded/op %.4f  parks/op %.6f" % (
    sys.argv[1], sys.argv[2], r["ops_per_sec"] / 1e6, r["latency"]["p99_ns"], po["mutex_spin_start"],
    po["mutex_spin_success"], po["mutex_park"]))' lk_mutex_v_$v $cell >> "$out/counters.txt"
				done
			done
		done
		cat "$out/counters.txt" ;;
	grace) ab_wide lk_mutex_v_grace0 grace ;;
	window)
		: > "$out/window.txt"
		for rev in 634c3ee 1c0394c 98df693; do
			src=/tmp/locklab-window-$rev
			rm -rf "$src" && mkdir -p "$src" && git archive "$rev" | tar -x -C "$src"
			cmake -S "$src" -B "$src/b" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
			cmake --build "$src/b" --target locklab_static -j "$(nproc)" > /dev/null
			cc -O2 -std=gnu11 -I"$src/include" "$out/window.c" "$src/b/liblocklab.a" -lpthread \
				-o "$src/window"
			for i in 1 2 3 4; do
				echo "$rev: $("$src/window" 800 | head -1)" >> "$out/window.txt"
			done
		done
		cat "$out/window.txt" ;;
	col100)
		need_drv
		$py scripts/mutex-ab --variant "now=$drv:lk_mutex_v_base" --variant "stamppre=$drv:lk_mutex_v_stamppre" \
			--variant "grace0=$drv:lk_mutex_v_grace0" --variant "rust_parking_lot=$drv:rust_parking_lot" \
			--threads 3,4,64 --cs-ns 1 --parallel-ratio 100 --repeat 15 --duration 0.2 \
			--warmup 0.05 --out "$out/col100.jsonl" > "$out/col100.txt" ;;
	*) echo "run.sh: unknown stage '$stage' (expected wide, two, p99, counters, grace, window or col100)" >&2; exit 2 ;;
	esac
done
