#!/usr/bin/env bash
# run.sh - the claim peek (peek.patch, LKM_CLAIM_PEEK) against the control, both as lab variants of
# one driver, and rust_parking_lot beside them: 5 interleaved repeats of 0.3 s at 2, 3, 4, 8 and 64
# threads / 1 ns / every outside ratio (about 2 minutes on 2 CPUs). Builds the patched tree in a git
# worktree of HEAD (needs git, cmake, ninja); nothing else should run. Writes screen1.jsonl and
# screen1.txt here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export LOCKLAB_BUSY_NS_PER_ITER=${LOCKLAB_BUSY_NS_PER_ITER:-0.3236}
wt="$(mktemp -d)/wt"
git -C "$repo" worktree add -q --detach "$wt" HEAD
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
git -C "$wt" apply "$here/peek.patch"
cmake -S "$wt" -B "$wt/b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS > /dev/null
ninja -C "$wt/b" locklab-bench > /dev/null
drv="$wt/b/locklab-bench"
"$repo/.venv/bin/python" "$repo/scripts/mutex-ab" --variant base="$drv":lk_mutex_v_base \
	--variant peek="$drv":lk_mutex_v_peek --variant rpl="$drv":rust_parking_lot \
	--threads 2,3,4,8,64 --cs-ns 1 --parallel-ratio 0,1,10,100 --repeat 5 --duration 0.3 \
	--out "$here/screen1.jsonl" > /dev/null
"$repo/.venv/bin/python" "$repo/scripts/ab-table" --control base --candidates peek,rpl \
	"$here/screen1.jsonl" | tee "$here/screen1.txt"
