#!/usr/bin/env bash
# bench/bots.sh — the figures of docs/security.md, in one command.
#
# Builds waitroom and the two bench tools, then, each against a fresh
# waitroom (embedded line, its own process, so the tools' CPU time is theirs
# alone):
#   1. the stuffing script of issue 11 (bench/cmd/stuff: one address, a
#      fresh anonymous session before every enter, 8 threads, 10 s) against
#      the default settings;
#   2. the same with no challenge (--entry-policy any): what the per-address
#      limit alone allows;
#   3. the same with the per-address limits lifted (rate 0), for 60 s:
#      places per CPU-second the proof of work leaves a script;
#   4. the same with neither (the settings before issue 11);
#   5. 16 signed-in clients polling, without and with 200 connections
#      sending their headers a byte a second (bench/cmd/slowheaders).
#
#   bench/bots.sh                 # about three minutes
#   STUFF_DURATION=30s STUFF_CPU_DURATION=120s bench/bots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

say() { printf '== %s\n' "$*" >&2; }
duration="${STUFF_DURATION:-10s}"
cpu_duration="${STUFF_CPU_DURATION:-60s}" # the CPU per place needs many places: each takes a random number of attempts
secret="bots-bench-secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
TMP="$(mktemp -d /tmp/waitroom-bots.XXXXXX)"
SERVER=""
cleanup() {
	local rc=$?
	if [[ -n "$SERVER" ]]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT INT TERM

go build -o "$TMP/waitroom" ./cmd/waitroom
go build -o "$TMP/stuff" ./bench/cmd/stuff
go build -o "$TMP/slowheaders" ./bench/cmd/slowheaders
port=$((20000 + RANDOM % 10000))
base="http://127.0.0.1:$port"

start() {
	rm -rf "$TMP/data"
	"$TMP/waitroom" serve --addr "127.0.0.1:$port" --data-dir "$TMP/data" --log-level warn \
		--auth-secret "$secret" "$@" >"$TMP/waitroom.log" 2>&1 &
	SERVER=$!
	for _ in $(seq 100); do
		curl -sf "$base/readyz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$TMP/waitroom.log" >&2
	return 1
}
stop() {
	kill "$SERVER"
	wait "$SERVER" 2>/dev/null || true
	SERVER=""
}

say "$(go version); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "1. default settings (entry challenge at the default cost, per-address limits 100 + 1/s)"
start
"$TMP/stuff" -url "$base" -threads 8 -duration "$duration"
stop
say "2. no challenge (--entry-policy any), default per-address limits"
start --entry-policy any
"$TMP/stuff" -url "$base" -threads 8 -duration "$duration"
stop
say "3. challenge, per-address limits lifted (for $cpu_duration)"
start --address-entry-rate 0 --address-session-rate 0
"$TMP/stuff" -url "$base" -threads 8 -duration "$cpu_duration"
stop
say "4. neither (the settings before issue 11)"
start --entry-policy any --address-entry-rate 0 --address-session-rate 0
"$TMP/stuff" -url "$base" -threads 8 -duration "$duration"
stop
say "5. slow clients: 200 connections sending their headers a byte a second"
start
"$TMP/slowheaders" -url "$base" -secret "$secret" -slow 200 -duration 10s
stop
