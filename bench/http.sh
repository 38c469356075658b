#!/usr/bin/env bash
# bench/http.sh — enter and status through the HTTP server on real Redis,
# beside the bare JSON endpoint (/healthz) of the same binary, measured with
# wrk in one run. Loopback only; bounded by DURATION per scenario. Every
# user is in line before the status run (bench/cmd/enterall), as the
# bench/run.sh harness has them: those who poll are in line.
#
#   bench/http.sh                 # starts its own redis-server
#   WAITROOM_REDIS_URL=redis://127.0.0.1:6379/0 bench/http.sh
#
# Env: DURATION (default 10s), CONNS (100), THREADS (2), USERS (200000),
# WEBHOOK_SILENT=1: events flow all through the run (a second queue paused and
# resumed every half second: an event each second it is read) and, where the
# binary has --webhook, go to a
# receiver that accepts connections and never answers (docs/benchmarks.md,
# "Webhooks and the hot paths"); a binary without it gets the same events
# and no receiver, so the two compare,
# READY_EVENTS=1: the queue admits at 500/s (50 every 100 ms) while enter and
# status run, with notifyOnReady, and each instance sends to a receiver that
# answers 204 at once: on a binary with entry.ready (issue 55) an event per
# user let in, on one without it the same line and no event, so the two
# compare (docs/benchmarks.md, 1g),
# PROFILE=DIR: also take a CPU profile of the instance during each scenario
# (the middle of its run, 5 s; DURATION ≥ 8s) into DIR/<name>.pprof, and print
# its top functions (go tool pprof -top), for where a request's time goes.
# Each scenario also prints the CPU time a request cost each process (the
# instance, Redis when this script started it, and wrk), from /proc and
# /usr/bin/time: on two cores the three share, their sum bounds req/s.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

DURATION=${DURATION:-10s}
CONNS=${CONNS:-100}
THREADS=${THREADS:-2}
USERS=${USERS:-200000}
source bench/lib.sh # work, pids, free_port, wait_for, start_redis

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
if [[ -z "${WAITROOM_REDIS_URL:-}" ]]; then
  start_redis
  export WAITROOM_REDIS_URL="redis://127.0.0.1:$rport/0"
fi

go build -o "$work/waitroom" ./cmd/waitroom
go build -o "$work/jwts" ./bench/jwts
go build -o "$work/enterall" ./bench/cmd/enterall
secret=bench-secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') # ≥ 32 bytes: --auth-secret on Redis
admin=bench-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
port=$(free_port)
profiling=()
metrics_base="http://127.0.0.1:$port"
if [[ -n "${PROFILE:-}" ]]; then
  mkdir -p "$PROFILE"
  mport=$(free_port)
  profiling=(--metrics-addr "127.0.0.1:$mport" --pprof)
  metrics_base="http://127.0.0.1:$mport"
fi
webhooks=()
if [[ -n "${WEBHOOK_SILENT:-}" ]] && "$work/waitroom" serve --help 2>&1 | grep -q -- '-webhook-secret-file'; then
  hport=$(free_port)
  # Accepts every connection and never answers: each attempt waits out its timeout.
  python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1024); held = []
while True: held.append(s.accept()[0])' "$hport" &
  pids+=($!)
  od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/webhook-secret"
  webhooks=(--webhook "http://127.0.0.1:$hport/hooks" --webhook-secret-file "$work/webhook-secret")
fi
if [[ -n "${READY_EVENTS:-}" ]]; then
  hport=$(free_port)
  # Answers every POST 204 at once, keeping its connections: a receiver that keeps up.
  python3 -c 'import asyncio, sys
async def serve(r, w):
    try:
        while True:
            head = await r.readuntil(b"\r\n\r\n")
            n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            await r.readexactly(n[0] if n else 0)
            w.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await w.drain()
    except Exception:
        w.close()
async def main():
    s = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    await s.serve_forever()
asyncio.run(main())' "$hport" &
  pids+=($!)
  receiver_pid=$! # its CPU a request is printed too: it shares the machine's cores
  od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/webhook-secret"
  webhooks=(--webhook "http://127.0.0.1:$hport/hooks" --webhook-secret-file "$work/webhook-secret")
fi
"$work/waitroom" serve --addr "127.0.0.1:$port" --auth-secret "$secret" --admin-token "$admin" \
  --redis-prefix "wrbench$RANDOM:" --data-dir "$work" --log-level warn "${profiling[@]}" "${webhooks[@]}" >"$work/waitroom.log" 2>&1 &
pids+=($!)
waitroom_pid=$!
base="http://127.0.0.1:$port"
wait_for "$work/waitroom.log" curl -sf "$base/readyz"

# A paused queue big enough for every user: the bench measures the line, not admission.
queue='{"paused":true,"capacity":10000000}'
if [[ -n "${READY_EVENTS:-}" ]]; then # admitting, and telling the shop of whoever it lets in
  admitting='{"capacity":10000000,"ratePerSecond":500,"batchSize":50,"intervalMs":100'
  queue=$admitting',"notifyOnReady":true}'
fi
if ! curl -sf -X PUT "$base/admin/v1/queues/bench" -H "Authorization: Bearer $admin" -d "$queue" >/dev/null; then
  # A checkout from before issue 55 knows no notifyOnReady: the same line
  # admitting, without the events (compare-http.sh's "before" side).
  [[ -n "${READY_EVENTS:-}" ]] || exit 1
  echo "this checkout knows no notifyOnReady: the same line, no events" >&2
  curl -sf -X PUT "$base/admin/v1/queues/bench" -H "Authorization: Bearer $admin" -d "$admitting}" >/dev/null
fi
if [[ -n "${WEBHOOK_SILENT:-}" ]]; then
  # Events for the whole run: another queue paused and resumed.
  (paused=false; while :; do
    paused=$([[ $paused == true ]] && echo false || echo true)
    curl -sf -X PUT "$base/admin/v1/queues/bench-events" -H "Authorization: Bearer $admin" -d "{\"paused\":$paused}" >/dev/null || true
    sleep 0.5
  done) &
  pids+=($!)
fi
"$work/jwts" -secret "$secret" -n "$USERS" >"$work/jwts.txt"

cpu_ticks() { # pid: user+system clock ticks so far, 0 when not ours to read
  [[ -n "${1:-}" && -r /proc/$1/stat ]] || { echo 0; return; }
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

run() { # name method path
  local out prof="" taker="" w0 r0 h0 w1 r1 h1 n wrkcpu
  if [[ -n "${PROFILE:-}" ]]; then
    prof="$PROFILE/$1.pprof"
    (sleep 2 && curl -sf -o "$prof" "http://127.0.0.1:$mport/debug/pprof/profile?seconds=5") &
    taker=$!
  fi
  w0=$(cpu_ticks "$waitroom_pid") r0=$(cpu_ticks "${redis_pid:-}") h0=$(cpu_ticks "${receiver_pid:-}")
  out=$(WRK_JWTS="$work/jwts.txt" WRK_METHOD=$2 WRK_PATH=$3 \
    /usr/bin/time -f 'WRKCPU %U %S' -o "$work/wrk.time" \
    wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s bench/wrk-users.lua "$base" | grep '^RESULT')
  w1=$(cpu_ticks "$waitroom_pid") r1=$(cpu_ticks "${redis_pid:-}") h1=$(cpu_ticks "${receiver_pid:-}")
  echo "$1 $out"
  # CPU µs per request: ticks are 1/100 s; wrk's user+system from time(1).
  n=$(sed -E 's/.*req\/s=([0-9]+).*/\1/' <<<"$out")
  wrkcpu=$(awk '/^WRKCPU/ { print $2 + $3 }' "$work/wrk.time")
  awk -v n="$n" -v d="${DURATION%s}" -v w=$((w1 - w0)) -v r=$((r1 - r0)) -v h=$((h1 - h0)) -v k="$wrkcpu" 'BEGIN {
    req = n * d; printf "  cpu_us/req instance=%.1f redis=%.1f wrk=%.1f", w * 1e4 / req, r * 1e4 / req, k * 1e6 / req
    if (h > 0) printf " receiver=%.1f", h * 1e4 / req
    printf "\n" }'

  if [[ -n "$prof" ]]; then
    wait "$taker"
    go tool pprof -top -nodecount=25 "$work/waitroom" "$prof" 2>/dev/null | sed 's/^/  /'
  fi
}

echo "# $(date -u +%F) $(nproc) cores, wrk -t$THREADS -c$CONNS -d$DURATION, Redis $(redis-server --version | grep -o 'v=[0-9.]*')${WEBHOOK_SILENT:+, events flowing, ${webhooks[1]:-no receiver}}${READY_EVENTS:+, admitting 500/s with notifyOnReady}"
run bare GET /healthz
run enter POST /api/v1/queues/bench/entries
# Those who poll are in line: enter whoever the enter run did not reach.
"$work/enterall" -jwts "$work/jwts.txt" -url "$base/api/v1/queues/bench/entries" >&2
run status GET /api/v1/queues/bench/entries/me
run bare GET /healthz
if ((${#webhooks[@]})); then
  curl -sf "$metrics_base/metrics" | grep -E '^waitroom_(webhook_pending|webhook_attempts_failed_total|events_published_total)' | sed 's/^/  /'
fi
