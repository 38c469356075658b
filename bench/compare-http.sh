#!/usr/bin/env bash
# bench/compare-http.sh — bench/http.sh on two commits, each from its own
# clean clone, in turns, so what a change costs the hot paths shows beside
# the run-to-run noise of a shared machine (docs/benchmarks.md, section 2).
#
#   bench/compare-http.sh BEFORE AFTER [ROUNDS]     # ROUNDS: 3 by default
#
# Each round runs bench/http.sh at BEFORE, then at AFTER (each with its own
# Redis), and prints its RESULT lines. At the end, each side's enter and
# status req/s ÷ the mean of the same run's two bare /healthz runs, per
# round and on average, and after ÷ before: ratios within one run, since
# an absolute req/s on a shared machine is not a result. Beside them, each
# side's instance CPU time an enter and a status (bench/http.sh's cpu_us/req,
# from /proc), whose ratio a loaded machine moves far less.
#
# READY_EVENTS=1 (passed on to bench/http.sh): the line admitting with
# notifyOnReady, a receiver taking the events (issue 55). Both sides then run
# this checkout's bench/http.sh, copied over theirs, since a commit before it
# knows no such scenario: the line the same, the events only where the binary
# sends them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?usage: bench/compare-http.sh BEFORE AFTER [ROUNDS]} after=${2:?usage: bench/compare-http.sh BEFORE AFTER [ROUNDS]}
rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in before after; do
	git clone -q "$repo" "$work/$side"
	git -C "$work/$side" checkout -q "${!side}"
	if [[ -n "${READY_EVENTS:-}" ]]; then
		cp "$repo/bench/http.sh" "$work/$side/bench/http.sh"
	fi
	# The harness's helpers from this checkout on both sides (its free_port
	# keeps below the ephemeral ports, which an older one did not).
	if [[ -f "$work/$side/bench/lib.sh" ]]; then
		cp "$repo/bench/lib.sh" "$work/$side/bench/lib.sh"
	fi
done
log=$work/results
for r in $(seq "$rounds"); do
	for side in before after; do
		echo "=== round $r $side ${!side} load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
		(cd "$work/$side" && bench/http.sh 2>&1 | grep -E 'RESULT|cpu_us/req') | tee -a "$log"
	done
done
awk '
	/^=== round/ { side = $4; round = $3; nb = 0; bare = 0; next }
	/RESULT/ {
		split($3, kv, "="); rps = kv[2]
		if ($1 == "bare") { bare += rps; nb++; if (nb == 2) { b = bare / 2
			e = enter / b; s = status / b; E[side] += e; S[side] += s; n[side]++
			printf "round %d %s: enter %.3f, status %.3f of bare\n", round, side, e, s } }
		else if ($1 == "enter") enter = rps
		else if ($1 == "status") status = rps
		last = $1
	}
	/cpu_us\/req/ && (last == "enter" || last == "status") {
		split($2, kv, "="); C[side, last] += kv[2]; nc[side, last]++
	}
	END {
		for (k in n) printf "%s mean: enter %.3f, status %.3f of bare\n", k, E[k] / n[k], S[k] / n[k]
		printf "after ÷ before: enter %.2f, status %.2f\n", (E["after"] / n["after"]) / (E["before"] / n["before"]), (S["after"] / n["after"]) / (S["before"] / n["before"])
		# The instance'"'"'s CPU time a request (from /proc): far less moved by a loaded machine than req/s.
		for (k in n) printf "%s mean: instance CPU %.1f µs an enter, %.1f µs a status\n", k, C[k, "enter"] / nc[k, "enter"], C[k, "status"] / nc[k, "status"]
		printf "CPU a request, before ÷ after (above 1: after costs less): enter %.2f, status %.2f\n", (C["before", "enter"] / nc["before", "enter"]) / (C["after", "enter"] / nc["after", "enter"]), (C["before", "status"] / nc["before", "status"]) / (C["after", "status"] / nc["after", "status"])
	}' "$log"
