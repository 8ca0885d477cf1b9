#!/usr/bin/env bash
# fail-gate.sh - the fail gate (fail-gate.patch, LKM_FAIL_GATE: after N spins in a row on a slot ran
# out of their budget, the budget loses its spin_min_ns floor until a spin takes the lock), screened
# against the control. Builds the patch on 55d7d31, the commit it was measured on, in a scratch
# worktree (scripts/variant-driver; needs git, cmake): a driver with the lab variants lk_mutex_v_fg4
# and lk_mutex_v_fg8, and two shims of that tree, without the knob (the control) and with
# LKM_FAIL_GATE 8. Run from the repository root after `make setup` (the CLI); nothing else should run.
#
#   docs/results/issue11-yield-in-cs-2core/fail-gate.sh [yield] [wide] [batch] [shim]
#
# yield (about 5 minutes): fail-gate-yield.json, the lab's yield-in-lock cells;
# wide (about 13 minutes): fail-gate-wide.jsonl and -table.txt, issue 11's whole mutex matrix;
# batch (about 1 minute): fail-gate-batch.jsonl and -table.txt, its fixed-work batch;
# shim (about 2 minutes): fail-gate-shim.txt, stress-ng --mutex 2 -t 3 (bogo ops/s) and yieldcs.c
#   MODE 0 (two processes summed) per round, for each lock in turn; ROUNDS=N (default 6).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
py="$repo/.venv/bin/python"
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(yield wide batch shim)
for s in "${stages[@]}"; do
	case $s in yield|wide|batch|shim) ;; *) echo "fail-gate.sh: unknown stage '$s' (yield wide batch shim)" >&2; exit 2 ;; esac
done
wt="$(mktemp -d)/wt"
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
drv=$("$repo/scripts/variant-driver" 55d7d31 "$here/fail-gate.patch" "$wt" 2>/dev/null)
variants=(--variant base="$drv":lk_mutex_v_base --variant fg4="$drv":lk_mutex_v_fg4 --variant fg8="$drv":lk_mutex_v_fg8)
threads=1,2,3,4,8,16,32,64,256

yield() {
	LOCKLAB_BENCH="$drv" "$repo/.venv/bin/locklab" bench mutex \
		--lock lk_mutex_v_base,lk_mutex_v_fg4,lk_mutex_v_fg8,rust_parking_lot --threads 2,4,8 --groups 1,2 \
		--cs-yield 1 --cs-ns 1 --duration 2 --warmup 0.2 --repeat 5 --baseline lk_mutex_v_base \
		--out "$here/fail-gate-yield.json" > /dev/null
}

wide() {
	"$py" "$repo/scripts/mutex-ab" "${variants[@]}" --threads $threads --cs-ns 1,100,2000 \
		--parallel-ratio 0,1,10,100 --repeat 5 --duration 0.2 --out "$here/fail-gate-wide.jsonl" > /dev/null
	"$py" "$repo/scripts/ab-table" --control base --candidates fg4,fg8 "$here/fail-gate-wide.jsonl" \
		> "$here/fail-gate-wide-table.txt"
}

batch() {
	"$py" "$repo/scripts/mutex-ab" --workload mutex-batch "${variants[@]}" --threads $threads \
		--cs-ns 1,100,2000 --total-ops 100000 --repeat 5 --out "$here/fail-gate-batch.jsonl" > /dev/null
	"$py" "$repo/scripts/ab-table" --control base --candidates fg4,fg8 "$here/fail-gate-batch.jsonl" \
		> "$here/fail-gate-batch-table.txt"
}

shim() {
	local bin out="$here/fail-gate-shim.txt" d
	for d in base:-DLKM_FAIL_GATE=0 fg:-DLKM_FAIL_GATE=8; do
		cmake -S "$wt" -B "$wt/${d%%:*}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="${d#*:}" > /dev/null
		cmake --build "$wt/${d%%:*}" -j "$(nproc)" --target locklab-preload > /dev/null
	done
	bin="$(mktemp -d)/yieldcs"
	cc -O2 -Wall -pthread -o "$bin" "$here/yieldcs.c"
	echo "# fail-gate shim: $(date -u +%FT%TZ), 55d7d31 + fail-gate.patch, $(nproc) CPUs; NAME stressng BOGO_OPS_S yieldcs0 OPS_S" > "$out"
	for r in $(seq "${ROUNDS:-6}"); do
		for v in base:"$wt/base/liblocklab-preload.so":lk_mutex fg8:"$wt/fg/liblocklab-preload.so":lk_mutex \
			 glibc:"$wt/base/liblocklab-preload.so":glibc rpl:"$wt/base/liblocklab-preload.so":rust_parking_lot; do
			IFS=: read -r name so lock <<< "$v"
			local s y t
			s=$(LD_PRELOAD="$so" LOCKLAB_LOCK=$lock stress-ng --mutex 2 -t 3 --metrics-brief 2>&1 |
				awk '/ mutex +[0-9]+ +[0-9.]+ / {printf "%d", $9; exit}')
			t=$(mktemp)
			LD_PRELOAD="$so" LOCKLAB_LOCK=$lock "$bin" 2 0 2 > "$t" &
			LD_PRELOAD="$so" LOCKLAB_LOCK=$lock "$bin" 2 0 2 >> "$t"
			wait
			y=$(awk '{s += $1} END {printf "%d", s}' "$t")
			rm -f "$t"
			echo "$name stressng $s yieldcs0 $y" >> "$out"
		done
	done
	sort -s -k1,1 "$out"
}

for s in "${stages[@]}"; do
	"$s"
done
