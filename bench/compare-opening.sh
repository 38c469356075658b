#!/usr/bin/env bash
# bench/compare-opening.sh — bench/opening.sh on two commits, each from its
# own clean clone, in turns (as bench/compare-http.sh), so what a change
# costs an opening shows beside the run-to-run noise of a shared machine.
# bench/opening.sh (and bench/lib.sh) is taken from the checkout running this script, so a
# commit from before it existed is measured the same way.
#
#   bench/compare-opening.sh BEFORE AFTER [ROUNDS]     # ROUNDS: 3; USERS=100000
#
# At the end, per store, each side's mean time and after ÷ before.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?usage: bench/compare-opening.sh BEFORE AFTER [ROUNDS]} after=${2:?usage: bench/compare-opening.sh BEFORE AFTER [ROUNDS]}
rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in before after; do
	git clone -q "$repo" "$work/$side"
	git -C "$work/$side" checkout -q "${!side}"
	cp "$repo/bench/opening.sh" "$repo/bench/lib.sh" "$work/$side/bench/"
done
log=$work/results
for r in $(seq "$rounds"); do
	for side in before after; do
		echo "=== round $r $side ${!side} load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
		# The whole output is kept: a run that fails says why (a grep under
		# pipefail would end this script with nothing said).
		if ! (cd "$work/$side" && bench/opening.sh >"$work/run.out" 2>&1); then
			echo "round $r $side failed:" >&2
			tail -n 20 "$work/run.out" >&2
		fi
		grep -E "^(RESULT|VERIFY)" "$work/run.out" | tee -a "$log" || true
	done
done
# took= is Go's duration text: ms, s or µs.
awk '
	/^=== round/ { side = $4; next }
	/RESULT/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		t = v["took"]; s = t + 0
		if (t ~ /ms$/) s /= 1000; else if (t ~ /µs$/) s /= 1e6; else if (t ~ /m[0-9]/) s = 0
		sum[v["store"] " " side] += s; n[v["store"] " " side]++
	}
	END {
		for (st in sum) { split(st, p, " "); stores[p[1]] = 1 }
		for (s in stores) {
			b = sum[s " before"] / n[s " before"]; a = sum[s " after"] / n[s " after"]
			printf "%s: before %.3f s, after %.3f s (mean of %d), after ÷ before %.3f\n", s, b, a, n[s " after"], a / b
		}
	}' "$log"
