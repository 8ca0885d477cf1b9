#!/usr/bin/env bash
# probe.sh - how many looks the spinner's wins took, at 2 threads, with the first look after one
# relax (lk_mutex_v_bp, the default's schedule) and after the backoff cap (lk_mutex_v_sdp): applies
# probe.patch to the tree, builds build-ab, runs, and reverts the patch. Writes probe.txt. Under a
# minute on the 2-vCPU guest. Run it alone, from a clean tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"
git apply "$here/probe.patch"
trap 'git apply -R "$here/probe.patch"' EXIT
cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS=-DLAB_MUTEX_VARIANTS >/dev/null
cmake --build build-ab >/dev/null
{
	echo "# share of the spinner's wins by the number of looks after the claim's (PROBE lines)"
	for cell in "1 0" "1 1" "100 0" "100 1" "2000 1"; do
		set -- $cell
		for l in bp sdp; do
			echo "cs-ns $1 parallel-ratio $2 lk_mutex_v_$l: $(build-ab/locklab-bench mutex --lock lk_mutex_v_$l \
				--threads 2 --cs-ns $1 --parallel-ratio $2 --duration 0.3 2>&1 >/dev/null | grep PROBE)"
		done
	done
} > "$here/probe.txt"
