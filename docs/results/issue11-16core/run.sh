#!/usr/bin/env bash
# run.sh - issue 11's matrix where its thread counts straddle the core count: a 16-core machine.
#
#   docs/results/issue11-16core/run.sh [main] [batch] [threads-4-64]     (default: all three)
#   docs/results/issue11-16core/run.sh counters crowd handoff wake backoff    (the stages of stop 25)
#   docs/results/issue11-16core/run.sh guess                                   (prepared at stop 25)
#
# main (about 7 minutes on 16 cores): the uncontended cell, the spinlock cells and the blocking
# mutexes' cells at 2-256 threads; batch (3 minutes): the fixed-work cells; threads-4-64 (2
# minutes): the mutex cells at 4 and 64 threads. Each is `locklab bench` (shared busy-loop
# calibration, shuffled lock order, repeats as the outer loop). Files go to $OUT (default
# results/issue11-16core-<time>): machine.txt, log.txt and one results file per bench, named as
# the suite names them so that `locklab suite --summarize` reads them, gzipped
# (threads-4-64.json is the issue11-mutex.json of the record's threads-4-64/).
#
# The driver is $LOCKLAB_BENCH, else build/locklab-bench (make build). Where the project cannot be
# built (the lent 16-core machine has no abseil and no network), a prepared driver can be carried:
# CARRY=DIR names a folder made by `scripts/carry-driver DIR` (the driver, and in DIR/lib the shared
# libraries it needs beyond libc; DIR/bench-glibc runs it on a carried libc when the machine's own
# cannot). Wheels in .whl/ (jsonschema and its needs) are installed to /tmp/site when the Python
# there lacks them. Each bench is stopped by SIGINT at its time limit, which makes locklab write
# the runs that finished as an "interrupted" results file.
#
# The four prepared stages are the record's next measurements (README.md, "What this record does
# not do"), about 10 minutes in all on 16 cores; they need a driver built with the lab's lk_mutex
# variants (-DLAB_MUTEX_VARIANTS), and counters one built with -DLOCKLAB_STATS=ON as well:
# CARRY_AB=DIR and CARRY_STATS=DIR, made by scripts/carry-driver, else build-ab/locklab-bench and
# build-ab-stats/locklab-bench. counters (1.5 minutes): the slow-path counters of lk_mutex and the
# extra-spinner and extra-wake variants at 8-32 threads (with how often a woken waiter took the lock
# or parked again); crowd (5 minutes): lk_mutex_v_crowd and _crowd4 against lk_mutex_v_base, with
# futex3 and absl_mutex, on 42 cells; handoff (1.5 minutes): handoff_ns 1 ms, 200 us and 50 us
# through scripts/mutex-ab, with futex3; wake (2 minutes): the extra-wake variants lk_mutex_v_wm2
# and _wm2crowd (LKM_WAKE_MORE) against lk_mutex_v_base, with futex3, at 8-32 threads. Limits:
# COUNTERS_LIMIT, CROWD_LIMIT, HANDOFF_LIMIT, WAKE_LIMIT (seconds). backoff (2.5 minutes, added at
# stop 25; BACKOFF_LIMIT): the landed 800 ns spinner backoff cap (lk_mutex_v_base) against the
# 16-relax cap before it (lk_mutex_v_bo16), with futex3, at 2-64 threads. guess (3 minutes, added
# at stop 25, not yet run there; GUESS_LIMIT): the unlock's guess (lk_mutex_v_base) against the
# unlock before it (lk_mutex_v_uh0), with futex3, on the same cells.
set -uo pipefail
stages=${*:-main batch threads-4-64}
for stage in $stages; do
	case $stage in
	main | batch | threads-4-64 | counters | crowd | handoff | wake | backoff | guess) ;;
	*) echo "run.sh: unknown stage '$stage' (expected main, batch, threads-4-64, counters, crowd, handoff, wake, backoff or guess)" >&2
		exit 2 ;;
	esac
done
cd "$(dirname "$0")/../../.."
out=${OUT:-results/issue11-16core-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
exec > >(tee "$out/log.txt") 2>&1

# the carried drivers' libraries (scripts/carry-driver), then carried DIR: the path of DIR's driver
for d in ${CARRY:-} ${CARRY_AB:-} ${CARRY_STATS:-}; do
	export LD_LIBRARY_PATH=$PWD/$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
carried() {
	if "$PWD/$1/locklab-bench" --version >&2; then
		echo "$PWD/$1/locklab-bench"
	elif [ -x "$1/bench-glibc" ]; then
		echo "run.sh: $1: the driver does not start on this libc; using the carried one" >&2
		echo "$PWD/$1/bench-glibc"
	else
		echo "run.sh: $1: no driver that starts here" >&2
		exit 1
	fi
}
[ -z "${CARRY:-}" ] || { LOCKLAB_BENCH=$(carried "$CARRY") || exit 1; export LOCKLAB_BENCH; }
ab=$PWD/build-ab/locklab-bench stats=$PWD/build-ab-stats/locklab-bench
[ -z "${CARRY_AB:-}" ] || ab=$(carried "$CARRY_AB") || exit 1
[ -z "${CARRY_STATS:-}" ] || stats=$(carried "$CARRY_STATS") || exit 1
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
if ! $py -c 'import jsonschema' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
	$py -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
		--target /tmp/site .whl/*.whl || exit 1
	export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
locklab() { $py -c 'import sys; from locklab.cli import main; sys.exit(main())' "$@"; }

{
	date -u +%FT%TZ
	uname -a
	grep -m1 'model name' /proc/cpuinfo
	echo "nproc: $(nproc)"
	lscpu 2>/dev/null
	ldd --version 2>&1 | head -1
	free -g
	cat /proc/loadavg
	locklab --version
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

# A driver that cannot run a 16-thread cell ends the script here, in seconds: each driver the
# stages use (main, batch and threads-4-64 use $LOCKLAB_BENCH, else build/locklab-bench; the
# prepared stages the variants driver, counters the statistics one).
drivers=()
for stage in $stages; do
	case $stage in
	main | batch | threads-4-64) drivers+=("${LOCKLAB_BENCH:-build/locklab-bench}") ;;
	counters) drivers+=("$stats") ;;
	*) drivers+=("$ab") ;;
	esac
done
for d in $(printf '%s\n' "${drivers[@]}" | sort -u); do
	"$d" mutex --lock lk_mutex --threads 16 --cs-ns 100 --duration 0.05 --warmup 0.01 > /dev/null ||
		{ echo "run.sh: the driver $d fails"; exit 1; }
done

mutexes=lk_mutex,glibc_normal,glibc_adaptive,glibc_pi,futex3,rust_std,rust_parking_lot,absl_mutex
bench() { # LIMIT_S NAME WORKLOAD ARGS... (the timed workloads get --duration 0.2 --warmup 0.05)
	local limit=$1 name=$2
	shift 2
	local common=(--no-progress)
	[ "$1" = mutex-batch ] || common+=(--duration 0.2 --warmup 0.05)
	echo "== $name ($(date -u +%T), at most ${limit} s): locklab bench $*"
	timeout -s INT "$limit" $py -c 'import sys; from locklab.cli import main; sys.exit(main())' \
		bench "$@" "${common[@]}" --out "$out/$name.json"
	echo "== $name: rc $? at $(date -u +%T); load $(cat /proc/loadavg)"
}

for stage in $stages; do
	case $stage in
	main)
		bench 40 uncontended mutex --lock "$mutexes" --threads 1 --repeat 5 --baseline glibc_normal
		bench 70 issue11-spin spinlock --lock spin_ttas,tbb_spin_mutex,ck_fas \
			--threads 2,8,16,17,32 --cs-ns 1,100 --parallel-ratio 0 --repeat 5 --baseline spin_ttas
		bench "${MUTEX_LIMIT:-420}" issue11-mutex mutex --lock "$mutexes" \
			--threads 2,8,16,17,32,256 --cs-ns 1,100,2000 --parallel-ratio 0,10 --repeat 4 \
			--baseline glibc_normal ;;
	batch)
		bench 270 issue11-batch mutex-batch --lock "$mutexes" --threads 8,16,17,32,256 \
			--total-ops 100000 --cs-ns 1,100,2000 --repeat 4 --baseline glibc_normal ;;
	threads-4-64)
		bench 150 threads-4-64 mutex --lock "$mutexes" --threads 4,64 --cs-ns 1,100,2000 \
			--parallel-ratio 0,10 --repeat 4 --baseline glibc_normal ;;
	counters)
		LOCKLAB_BENCH=$stats bench "${COUNTERS_LIMIT:-90}" counters mutex \
			--lock lk_mutex_v_base,lk_mutex_v_crowd,lk_mutex_v_crowd4,lk_mutex_v_wm2,lk_mutex_v_wm2crowd \
			--threads 8,16,32 \
			--cs-ns 1,100 --parallel-ratio 0,10 --repeat 2 --baseline lk_mutex_v_base ;;
	crowd)
		LOCKLAB_BENCH=$ab bench "${CROWD_LIMIT:-300}" crowd mutex \
			--lock "${CROWD_LOCKS:-lk_mutex_v_base,lk_mutex_v_crowd,lk_mutex_v_crowd4,futex3,absl_mutex}" \
			--threads "${CROWD_THREADS:-4,8,16,17,32,64,256}" --cs-ns 1,100,2000 --parallel-ratio 0,10 --repeat 4 \
			--baseline lk_mutex_v_base ;;
	handoff)
		# one busy-loop calibration for every run, as locklab bench shares one
		busy=$("$ab" mutex --lock lk_mutex --threads 1 --cs-ns 1 --duration 0.02 --warmup 0 |
			$py -c 'import json, sys; print(json.load(sys.stdin)["result"]["work"]["busy_ns_per_iter"])')
		echo "== handoff ($(date -u +%T), at most ${HANDOFF_LIMIT:-90} s): scripts/mutex-ab, busy $busy ns/iter"
		LOCKLAB_BUSY_NS_PER_ITER=$busy timeout -s INT "${HANDOFF_LIMIT:-90}" $py scripts/mutex-ab \
			--variant "h1ms=$ab:lk_mutex" \
			--variant "h200us=$ab:lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=200000" \
			--variant "h50us=$ab:lk_mutex:LOCKLAB_MUTEX_HANDOFF_NS=50000" \
			--variant "futex3=$ab:futex3" --threads 8,16,32 --cs-ns 1,100 --parallel-ratio 0,10 \
			--repeat 4 --duration 0.2 --warmup 0.05 --out "$out/handoff.jsonl"
		echo "== handoff: rc $? at $(date -u +%T); load $(cat /proc/loadavg)" ;;
	backoff)
		LOCKLAB_BENCH=$ab bench "${BACKOFF_LIMIT:-150}" backoff mutex \
			--lock lk_mutex_v_base,lk_mutex_v_bo16,futex3 \
			--threads 2,4,8,16,17,32,64 --cs-ns 1,100,2000 --parallel-ratio 0,10 --repeat 4 \
			--baseline lk_mutex_v_base ;;
	guess)
		LOCKLAB_BENCH=$ab bench "${GUESS_LIMIT:-180}" guess mutex \
			--lock lk_mutex_v_base,lk_mutex_v_uh0,futex3 \
			--threads 2,4,8,16,17,32,64 --cs-ns 1,100,2000 --parallel-ratio 0,10 --repeat 4 \
			--baseline lk_mutex_v_base ;;
	wake)
		LOCKLAB_BENCH=$ab bench "${WAKE_LIMIT:-120}" wake mutex \
			--lock lk_mutex_v_base,lk_mutex_v_wm2,lk_mutex_v_wm2crowd,futex3 \
			--threads 8,16,17,32 --cs-ns 1,100,2000 --parallel-ratio 0,10 --repeat 4 \
			--baseline lk_mutex_v_base ;;
	esac
done
gzip -f "$out"/*.json "$out"/*.jsonl "$out"/*.partial 2>/dev/null
ls -la "$out"
