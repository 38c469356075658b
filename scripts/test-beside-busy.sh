#!/usr/bin/env bash
# The test command's determinism check (issue 39): N full runs of .ci/run,
# each on a fresh clone of this repository checked out at REV, each with
# BUSY cores spinning beside it (yes > /dev/null), one line per run in the
# log (default /tmp/test-beside-busy.log) and each run's output kept beside it.
#
# Usage: scripts/test-beside-busy.sh REV N BUSY [LOG]
#   scripts/test-beside-busy.sh main 5 1 && scripts/test-beside-busy.sh main 2 2
set -uo pipefail
rev=${1:?REV}; n=${2:?N}; busy=${3:?BUSY}; log=${4:-/tmp/test-beside-busy.log}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rev=$(git -C "$repo" rev-parse --short "$rev") || exit 1
for i in $(seq "$n"); do
	d=$(mktemp -d /tmp/test-beside-busy.XXXXXX)
	git clone -q "$repo" "$d/waitroom" && git -C "$d/waitroom" checkout -q "$rev" || exit 1
	pids=()
	for _ in $(seq "$busy"); do yes >/dev/null & pids+=($!); done
	start=$(date +%s) l0=$(cut -d' ' -f1 /proc/loadavg)
	(cd "$d/waitroom" && CI=true .ci/run >"$d/out.log" 2>&1)
	rc=$?
	end=$(date +%s) l1=$(cut -d' ' -f1-3 /proc/loadavg)
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	cp "$d/out.log" "${log%.log}-$rev-busy$busy-$i.log"
	printf '%s %s busy %d run %d: exit %d in %d s, load at start %s, at end %s\n' \
		"$(date -u +%H:%M)" "$rev" "$busy" "$i" "$rc" $((end - start)) "$l0" "$l1" | tee -a "$log"
	rm -rf "$d"
done
