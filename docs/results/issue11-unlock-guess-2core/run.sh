#!/usr/bin/env bash
# run.sh - the unlock's guess (lk_mutex_unlock_hint, issue 11 stop 25) against the unlock before it
# (lk_mutex_v_uh0), on this machine: about 9 minutes on 2 CPUs. Run it alone on the machine.
#
#   docs/results/issue11-unlock-guess-2core/run.sh [wide] [pinned] [uncontended]   (default: all)
#
# wide: scripts/ab-wide on issue 11's whole matrix (108 cells, 5 interleaved repeats; about 6.5
# minutes), read with `scripts/ab-table --control lk_mutex_v_uh0 --candidates lk_mutex_v_base
# wide.json`. pinned: scripts/mutex-ab under `taskset -c 0` (one CPU, as a container pinned to one;
# the record issue11-unlock-rmw's shape) with futex3 and rust_parking_lot, 2-32 threads x 1, 100 ns x
# outside work 0, 1x, 5 repeats (about 2 minutes). uncontended: uncontended.c, a program linked
# against build/liblocklab.so (so the guess is read through the GOT, as any program's is), times
# lock+unlock pairs with mutex.h's unlock and with a copy of the unlock before the guess, best of 15
# batches, three times.
# Needs build-ab/locklab-bench (make build-ab: cmake -S . -B build-ab -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS)
# and build/ (make build).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/issue11-unlock-guess-2core
drv=build-ab/locklab-bench
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
[ -x "$drv" ] || { echo "run.sh: $drv missing (cmake -S . -B build-ab -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS && cmake --build build-ab)" >&2; exit 2; }
for stage in ${*:-wide pinned uncontended}; do
	case $stage in
	wide)
		scripts/ab-wide "$drv" "$out/wide.json" lk_mutex_v_base lk_mutex_v_uh0 > "$out/wide-log.txt" 2>&1
		$py scripts/ab-table --control lk_mutex_v_uh0 --candidates lk_mutex_v_base "$out/wide.json" \
			> "$out/wide-table.txt" ;;
	pinned)
		# the busy-loop calibration of the record issue11-unlock-rmw, so the cells are its cells
		LOCKLAB_BUSY_NS_PER_ITER=0.2725410061495473 taskset -c 0 $py scripts/mutex-ab \
			--variant "guess=$drv:lk_mutex_v_base" --variant "noguess=$drv:lk_mutex_v_uh0" \
			--variant "futex3=$drv:futex3" --variant "rust_parking_lot=$drv:rust_parking_lot" \
			--threads 2,4,8,32 --cs-ns 1,100 --parallel-ratio 0,1 --repeat 5 --duration 0.2 \
			--warmup 0.05 --out "$out/pinned.jsonl" > "$out/pinned.txt" ;;
	uncontended)
		cc -O2 -std=gnu11 -fPIE -pie -Iinclude "$out/uncontended.c" -Lbuild -llocklab \
			-Wl,-rpath,"$PWD/build" -o /tmp/locklab-uncontended
		for i in 1 2 3; do /tmp/locklab-uncontended; done | tee "$out/uncontended.txt" ;;
	*) echo "run.sh: unknown stage '$stage' (expected wide, pinned or uncontended)" >&2; exit 2 ;;
	esac
done
