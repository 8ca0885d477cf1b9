#!/usr/bin/env bash
# run.sh - the claim peek (peek.patch, LKM_CLAIM_PEEK) against the control, both as lab variants of
# one driver, and rust_parking_lot beside them: 5 interleaved repeats of 0.3 s at 2, 3, 4, 8 and 64
# threads / 1 ns / every outside ratio (about 2 minutes on 2 CPUs). Builds the patch on 55d7d31,
# the commit it was measured on, in a scratch worktree (scripts/variant-driver; needs git, cmake);
# nothing else should run. Writes screen1.jsonl and screen1.txt here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
wt="$(mktemp -d)/wt"
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
drv=$("$repo/scripts/variant-driver" 55d7d31 "$here/peek.patch" "$wt" 2>/dev/null)
"$repo/.venv/bin/python" "$repo/scripts/mutex-ab" --variant base="$drv":lk_mutex_v_base \
	--variant peek="$drv":lk_mutex_v_peek --variant rpl="$drv":rust_parking_lot \
	--threads 2,3,4,8,64 --cs-ns 1 --parallel-ratio 0,1,10,100 --repeat 5 --duration 0.3 \
	--out "$here/screen1.jsonl" > /dev/null
"$repo/.venv/bin/python" "$repo/scripts/ab-table" --control base --candidates peek,rpl \
	"$here/screen1.jsonl" | tee "$here/screen1.txt"
